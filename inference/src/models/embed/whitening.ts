import { readFileSync } from 'node:fs';
import { l2Normalize } from './vector.ts';

/**
 * A whitening file (scripts/fit-whitening.ts writes it): the principal components of unit vectors over a training
 * corpus, which `npm run eval` never scores, and how many of them to keep at what power. Versioned in its name and
 * `id`: a new fit is a new file and a new embedding model id.
 */
export type WhiteningFile = {
  readonly id: string;
  readonly about: string;
  /** The input's dimensions. */
  readonly dims: number;
  /** Components kept: the output's dimensions. */
  readonly kept: number;
  /** Each component's coordinate is divided by its eigenvalue to this power (0.5 whitens fully, 0 only rotates). */
  readonly power: number;
  /** The kept components' eigenvalues, largest first. */
  readonly eigenvalues: readonly number[];
  /** The corpus mean: float32 little-endian, base64, `dims` values. */
  readonly mean: string;
  /** The kept components as unit rows: float32 little-endian, base64, `kept` x `dims`, row-major. */
  readonly components: string;
  /** Where the training images came from, each with its licence. */
  readonly corpus: {
    readonly package: string;
    readonly version: string;
    readonly license: string;
    readonly rule: string;
    readonly files: readonly string[];
  };
};

/**
 * PCA whitening of a unit vector: less the corpus mean, projected on the first `kept` principal components, each
 * coordinate divided by its eigenvalue to the power `power`, L2-normalised. The directions along which all pictures
 * vary most weigh less, the rarer ones that tell two pictures apart more; the components past `kept`, the least
 * varying, are dropped.
 */
export class Whitening {
  readonly id: string;
  readonly dims: number;
  readonly kept: number;
  readonly #mean: Float32Array;
  /** The components, each already divided by its eigenvalue to the power. */
  readonly #rows: Float64Array;

  constructor(file: WhiteningFile) {
    this.id = file.id;
    this.dims = file.dims;
    this.kept = file.kept;
    this.#mean = float32s(file.mean, file.dims);
    const components = float32s(file.components, file.kept * file.dims);
    this.#rows = Float64Array.from(components, (value, i) => value / file.eigenvalues[Math.floor(i / file.dims)]! ** file.power);
  }

  static read(file: URL): Whitening {
    return new Whitening(JSON.parse(readFileSync(file, 'utf8')) as WhiteningFile);
  }

  apply(vector: ArrayLike<number>): Float32Array {
    if (vector.length !== this.dims) throw new Error(`whitening ${this.id} takes ${this.dims} dimensions, got ${vector.length}`);
    const centred = Float64Array.from(this.#mean, (mean, i) => vector[i]! - mean);
    const projected = new Float64Array(this.kept);
    for (let k = 0; k < this.kept; k++) {
      let sum = 0;
      for (let i = 0, row = k * this.dims; i < this.dims; i++) sum += centred[i]! * this.#rows[row + i]!;
      projected[k] = sum;
    }
    return l2Normalize(projected);
  }
}

/** `count` float32 little-endian values from base64. */
export function float32s(base64: string, count: number): Float32Array {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length !== count * 4) throw new Error(`expected ${count} float32 values, got ${bytes.length} bytes`);
  const values = new Float32Array(count);
  for (let i = 0; i < count; i++) values[i] = bytes.readFloatLE(i * 4);
  return values;
}
