/**
 * Fits the whitening of the fused embedder's MobileNetV2 part (src/models/embed/whitening.ts) and writes it beside
 * the embedders (src/models/embed/embedder-specs.ts), as a new versioned file. The training corpus is images of the
 * project's own kind that `npm run eval` never scores: the Tux Paint stamps Debian ships in tuxpaint-stamps-default
 * (GPL-2.0, the source of the cut-outs in test/fixtures/images), less the stamps in test/fixtures/images
 * (manifest.json's source_path), the `_mirror` copies of others, and those under 100 px on both sides (images the
 * service refuses). Each is embedded as the service does (decode, views, the summed average pool, L2-normalised), and
 * the PCA of those unit vectors is kept:
 *
 *   cd /tmp && apt-get download tuxpaint-stamps-default && dpkg-deb -x tuxpaint-stamps-default_*.deb tuxpaint
 *   node inference/scripts/fit-whitening.ts --package-root /tmp/tuxpaint [--kept 256] [--power 0.25]
 *
 * 256 components at power 1/4 are issue 21's choice (made on images outside the project), not tuned on the eval.
 * The file's name and id carry the choices and VERSION, and the fused embedder's model id carries the whitening's id:
 * a new fit is a new embedding, which applications reach by a reindex.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import sharp from 'sharp';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
import { decodeImage } from '../src/image/decode.ts';
import { embedViews, MOBILENET_V2_NETWORK, pooledOverViews } from '../src/models/embed/features.ts';
import { l2Normalize } from '../src/models/embed/vector.ts';
import type { WhiteningFile } from '../src/models/embed/whitening.ts';
import { createOnnxRuntime } from '../src/runtime/onnxruntime.ts';

const PACKAGE = 'tuxpaint-stamps-default';
const LICENSE = 'GPL-2.0 (Tux Paint stamps)';
/** The spec's invalid image: both sides under 100 px. */
const MIN_SIDE = 100;
/** Bump when the fit changes in a way the arguments and the corpus size do not show. */
const VERSION = 1;

const { values: args } = parseArgs({
  options: { 'package-root': { type: 'string' }, kept: { type: 'string', default: '256' }, power: { type: 'string', default: '0.25' } },
});
if (!args['package-root']) throw new Error(`--package-root: where ${PACKAGE}'s .deb was extracted (dpkg-deb -x)`);
const root = path.resolve(args['package-root']);
const stampsDir = path.join(root, 'usr/share/tuxpaint/stamps');
const kept = Number(args.kept);
const power = Number(args.power);

const version = await packageVersion(root);
const files = await corpusFiles(stampsDir);
console.error(`${files.length} stamps of ${PACKAGE} ${version}`);

// One thread: the same sums in the same order on every machine.
const session = await (await createOnnxRuntime({ intraOpThreads: 1 })).load(MOBILENET_V2_NETWORK.source);
const vectors: Float32Array[] = [];
for (const file of files) {
  const views = await embedViews((await decodeImage(await readFile(path.join(stampsDir, file)))).pixels);
  vectors.push(l2Normalize(await pooledOverViews(session, MOBILENET_V2_NETWORK, views)));
}

const dims = vectors[0]!.length;
const mean = new Float64Array(dims);
for (const vector of vectors) vector.forEach((value, i) => (mean[i]! += value / vectors.length));
const covariance = new Float64Array(dims * dims);
for (const vector of vectors) {
  const centred = Float64Array.from(vector, (value, i) => value - mean[i]!);
  for (let i = 0; i < dims; i++) for (let j = i; j < dims; j++) covariance[i * dims + j]! += (centred[i]! * centred[j]!) / vectors.length;
}
for (let i = 0; i < dims; i++) for (let j = 0; j < i; j++) covariance[i * dims + j] = covariance[j * dims + i]!;
const { values, vectors: eigenvectors } = symmetricEigen(covariance, dims);
const order = [...values.keys()].sort((a, b) => values[b]! - values[a]!).slice(0, kept);
if (!(values[order.at(-1)!]! > 0)) throw new Error(`fewer than ${kept} components with any variance: too few images`);
const components = new Float32Array(kept * dims);
order.forEach((column, row) => {
  for (let i = 0; i < dims; i++) components[row * dims + i] = eigenvectors[i * dims + column]!;
});

const id = `pca${kept}-pow${power}-tuxpaint${files.length}-v${VERSION}`;
const file: WhiteningFile = {
  id,
  about:
    `PCA whitening of the fused embedder's MobileNetV2 part, fit by inference/scripts/fit-whitening.ts on ${files.length} ` +
    `stamps of ${PACKAGE} ${version} that test/fixtures/images does not hold`,
  dims,
  kept,
  power,
  eigenvalues: order.map((column) => values[column]!),
  mean: base64(Float32Array.from(mean)),
  components: base64(components),
  corpus: {
    package: PACKAGE,
    version,
    license: LICENSE,
    rule: `every PNG stamp not in test/fixtures/images/manifest.json, not a _mirror copy, and at least ${MIN_SIDE} px on a side`,
    files,
  },
};
const out = path.resolve(import.meta.dirname, '../src/models/embed', `whitening-mobilenet-v2-${id}.json`);
await writeFile(out, `${JSON.stringify(file)}\n`);
const largest = file.eigenvalues.slice(0, 5).map((value) => value.toPrecision(3));
console.error(`wrote ${path.relative(process.cwd(), out)} (${id}); largest eigenvalues ${largest.join(', ')}`);
process.exit(0);

/** The package's version, from the first line of its Debian changelog: "tuxpaint-stamps (2022.06.04-1) unstable; ...". */
async function packageVersion(root: string): Promise<string> {
  const changelog = gunzipSync(await readFile(path.join(root, 'usr/share/doc', PACKAGE, 'changelog.Debian.gz'))).toString('utf8');
  const version = /^\S+ \(([^)]+)\)/.exec(changelog)?.[1];
  if (!version) throw new Error(`no version in ${PACKAGE}'s changelog`);
  return version;
}

/** The stamps the corpus takes (see the top of this file), as paths under the stamps folder, in name order. */
async function corpusFiles(stampsDir: string): Promise<string[]> {
  type Entry = { source_package: string; source_path: string };
  const manifest = JSON.parse(await readFile(path.join(IMAGES_DIR, 'manifest.json'), 'utf8')) as Entry[];
  const scored = new Set(manifest.filter((entry) => entry.source_package === PACKAGE).map((entry) => entry.source_path));
  const files: string[] = [];
  for (const file of (await readdir(stampsDir, { recursive: true })).sort()) {
    if (!file.endsWith('.png') || file.endsWith('_mirror.png') || scored.has(file)) continue;
    const { width = 0, height = 0 } = await sharp(path.join(stampsDir, file)).metadata();
    if (width >= MIN_SIDE || height >= MIN_SIDE) files.push(file);
  }
  return files;
}

function base64(values: Float32Array): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/**
 * Eigenvalues and eigenvectors of a symmetric n x n matrix (row-major) by cyclic Jacobi rotations: slow for large n
 * but simple and accurate, and n is 448. The eigenvectors are the columns of `vectors`, in the order of `values`.
 */
function symmetricEigen(matrix: Float64Array, n: number): { values: Float64Array; vectors: Float64Array } {
  const a = Float64Array.from(matrix);
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  let scale = 0;
  for (const value of a) scale += value * value;
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q]! ** 2;
    if (off <= 1e-24 * scale) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!;
        if (apq === 0) continue;
        // The rotation that zeroes a[p][q]: t = tan of its angle, the smaller root.
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq);
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const [kp, kq] = [a[k * n + p]!, a[k * n + q]!];
          a[k * n + p] = c * kp - s * kq;
          a[k * n + q] = s * kp + c * kq;
        }
        for (let k = 0; k < n; k++) {
          const [pk, qk] = [a[p * n + k]!, a[q * n + k]!];
          a[p * n + k] = c * pk - s * qk;
          a[q * n + k] = s * pk + c * qk;
        }
        for (let k = 0; k < n; k++) {
          const [kp, kq] = [v[k * n + p]!, v[k * n + q]!];
          v[k * n + p] = c * kp - s * kq;
          v[k * n + q] = s * kp + c * kq;
        }
      }
    }
  }
  return { values: Float64Array.from({ length: n }, (_, i) => a[i * n + i]!), vectors: v };
}
