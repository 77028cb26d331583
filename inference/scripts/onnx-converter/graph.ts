import type { Attribute, DataType, Node, Tensor, TensorData } from './onnx-model.ts';

/**
 * Where a converted value keeps its axes: as the TF graph has them ('tf'), or,
 * for a 4-D NHWC feature map, as NCHW, the layout ONNX's Conv and pooling
 * take. Values go NCHW at the first convolution and back only where an op
 * needs TF's axes (a reshape, a graph output), so a chain of convolutions has
 * no transposes inside it.
 */
export type Layout = 'tf' | 'nchw';

/** A TF tensor as converted: the ONNX tensor holding it, and its contents when known at conversion time. */
export type Value = {
  readonly name: string;
  readonly dtype: DataType;
  readonly layout: Layout;
  /** In TF's layout; becomes an initializer only when an ONNX node reads it. */
  readonly constant?: Tensor;
};

const NHWC_TO_NCHW = [0, 3, 1, 2];
const NCHW_TO_NHWC = [0, 2, 3, 1];

/** Where TF's NHWC axis `axis` (-4..3) sits in NCHW. */
export function nchwAxis(axis: number): number {
  return NHWC_TO_NCHW.indexOf(axis < 0 ? axis + 4 : axis);
}

/** Collects the nodes and initializers of the ONNX graph being built. */
export class GraphBuilder {
  readonly nodes: Node[] = [];
  readonly initializers = new Map<string, Tensor>();
  readonly #names = new Set<string>();
  readonly #converted = new Map<string, string>();

  /** A tensor or node name not used yet, from a hint. */
  uniqueName(hint: string): string {
    let name = hint;
    for (let n = 1; this.#names.has(name); n++) name = `${hint}_${n}`;
    this.#names.add(name);
    return name;
  }

  /** Adds a node and returns its output names, made unique from `outputs` (one hint, or one per output). */
  add(opType: string, inputs: readonly string[], attributes: readonly Attribute[], outputs: readonly string[] | string): string[] {
    const outputNames = typeof outputs === 'string' ? [this.uniqueName(outputs)] : outputs.map((name) => this.uniqueName(name));
    this.nodes.push({ name: this.uniqueName(`${outputNames[0]}/${opType}`), opType, inputs, outputs: outputNames, attributes });
    return outputNames;
  }

  /** One output of a single-output node. */
  add1(opType: string, inputs: readonly string[], attributes: readonly Attribute[], output: string): string {
    return this.add(opType, inputs, attributes, output)[0]!;
  }

  /** A new initializer named after `hint`. */
  initializer(hint: string, tensor: Tensor): string {
    const name = this.uniqueName(hint);
    this.initializers.set(name, tensor);
    return name;
  }

  /** An int64 initializer of the given values (shapes, axes, sizes). */
  int64s(hint: string, values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.initializer(hint, { dtype: 'int64', dims, data: BigInt64Array.from(values, (value) => BigInt(value)) });
  }

  /** A float32 scalar initializer, shared by every node that reads the same value. */
  scalar(value: number): string {
    const tensor: Tensor = { dtype: 'float32', dims: [], data: Float32Array.of(value) };
    return this.#once(`scalar>${value}`, () => this.initializer(`scalar_${value}`, tensor));
  }

  /** The value with TF's axes. */
  tf(value: Value): string {
    if (value.constant) return this.#once(`${value.name}>tf`, () => this.initializer(value.name, value.constant!));
    if (value.layout === 'tf') return value.name;
    return this.#once(`${value.name}>tf`, () => this.#transpose(value.name, NCHW_TO_NHWC, `${value.name}/nhwc`));
  }

  /**
   * The value as NCHW. Constants (a bias, a scalar) are broadcast against
   * NHWC maps in TF, so their axes are padded to four and permuted likewise.
   */
  nchw(value: Value): string {
    const constant = value.constant;
    if (constant) {
      return this.#once(`${value.name}>nchw`, () => {
        if (constant.dims.length > 4) throw new Error(`constant ${value.name} of rank ${constant.dims.length} cannot meet an NCHW map`);
        const padded = { ...constant, dims: [...Array<number>(4 - constant.dims.length).fill(1), ...constant.dims] };
        return this.initializer(`${value.name}/nchw`, transposeTensor(padded, NHWC_TO_NCHW));
      });
    }
    if (value.layout === 'nchw') return value.name;
    return this.#once(`${value.name}>nchw`, () => this.#transpose(value.name, NHWC_TO_NCHW, `${value.name}/nchw`));
  }

  #transpose(input: string, perm: readonly number[], output: string): string {
    return this.add1('Transpose', [input], [{ name: 'perm', ints: perm }], output);
  }

  #once(key: string, make: () => string): string {
    let name = this.#converted.get(key);
    if (name === undefined) {
      name = make();
      this.#converted.set(key, name);
    }
    return name;
  }
}

/** A constant's values permuted: output axis i is input axis perm[i]. */
export function transposeTensor(tensor: Tensor, perm: readonly number[]): Tensor {
  const { dims, data } = tensor;
  const outDims = perm.map((axis) => dims[axis]!);
  const inStrides = strides(dims);
  const out = new (data.constructor as new (length: number) => TensorData)(data.length);
  const source = data as ArrayLike<number | bigint>;
  const target = out as unknown as { [index: number]: number | bigint };
  const index = new Array<number>(dims.length).fill(0);
  for (let i = 0; i < data.length; i++) {
    // `index` walks the output in row-major order; map it back to the input.
    let from = 0;
    for (let axis = 0; axis < perm.length; axis++) from += index[axis]! * inStrides[perm[axis]!]!;
    target[i] = source[from]!;
    for (let axis = outDims.length - 1; axis >= 0 && ++index[axis]! === outDims[axis]; axis--) index[axis] = 0;
  }
  return { dtype: tensor.dtype, dims: outDims, data: out };
}

function strides(dims: readonly number[]): number[] {
  const result = new Array<number>(dims.length);
  let stride = 1;
  for (let axis = dims.length - 1; axis >= 0; axis--) {
    result[axis] = stride;
    stride *= dims[axis]!;
  }
  return result;
}
