import { EigenvalueDecomposition, Matrix } from 'ml-matrix';
import { z } from 'zod';

/**
 * An application's tuning projection: a shrinkage LDA fitted on the stored vectors of its labelled images (a metadata
 * field such as `category`), a linear map T that every stored and query vector is multiplied by (then L2-normalised)
 * so that cosine similarity ranks images of one label closer together. Pure: no Env, no I/O.
 *
 * With the N labelled vectors x as stored (not centred, not re-normalised), class c holding n_c of them with mean μ_c,
 * and μ the overall mean:
 *   Sw = (Σ x xᵀ − Σ_c n_c μ_c μ_cᵀ) / N,   M = [√(n_c/N) (μ_c − μ)] (D×C), so that Sb = M Mᵀ;
 *   S  = (1 − SHRINKAGE) Sw + SHRINKAGE (tr Sw / D) I = L Lᵀ (Cholesky);
 *   G  = L⁻¹ M,  Gᵀ G a_i = λ_i a_i (λ descending, those above 1e-9 λ_1 kept),  u_i = G a_i / √λ_i;
 *   w_i = √(λ_i / λ_1) + FLOOR_WEIGHT, and FLOOR_WEIGHT (β) on every direction outside span(u);
 *   T  = (β I + Σ_i (w_i − β) u_i u_iᵀ) L⁻¹ = β L⁻¹ + U diag(w − β) (Uᵀ L⁻¹).
 * Only a Cholesky, a triangular inverse and a C×C eigenproblem: no D×D eigendecomposition, so D = 1536 fits a step.
 *
 * The D×D work is written by hand on typed arrays, packed triangles and four-by-two dot-product blocks; ml-matrix
 * (measured at D = 1536, Node 22 and workerd) keeps matrices as arrays of rows read through get/set: its Cholesky
 * takes 0.65 s against 0.3 s here, its solve for L⁻¹ 33 s, and full square matrices would double the memory of a
 * Worker step (the fit here allocates about 45 MB at D = 1536, C = 256). The C×C eigenproblem is ml-matrix's symmetric
 * EigenvalueDecomposition (tred2/tql2): 0.12 s at C = 256 in workerd, where a hand-written cyclic Jacobi took 0.47 s.
 */

export const SHRINKAGE = 0.3;
export const FLOOR_WEIGHT = 0.2;
/** At most this many classes are fitted (the caller picks the most frequent). */
export const MAX_CLASSES = 256;
/** Directions of Gᵀ G whose eigenvalue is at most this fraction of the largest are left at the floor weight. */
const RELATIVE_EIGENVALUE_FLOOR = 1e-9;

/** Sufficient statistics of the labelled vectors a tuning fits on, accumulated a batch at a time. */
export type FitStatistics = {
  readonly dims: number;
  count: number;
  /** packed upper triangle (row-major, i<=j) of Σ x xᵀ, D(D+1)/2 */
  readonly scatter: Float64Array;
  readonly classes: Map<string, { count: number; sum: Float64Array }>;
};

export type Projection = {
  readonly dims: number;
  /** T, D×D row-major */
  readonly matrix: Float32Array;
  readonly classes: number;
};

/* Packed triangles, row-major. A row's entries j = from..to-1 lie at base + j. */
type Row = { base: number; from: number; to: number };
const triangleSize = (dims: number): number => (dims * (dims + 1)) / 2;
/** Where row i of the upper triangle (i <= j) starts, less i: FitStatistics's scatter, and L⁻ᵀ in the fit. */
const upperBase = (i: number, dims: number): number => i * dims - (i * (i + 1)) / 2;
/** Where row i of the lower triangle (j <= i) starts: the fit's S, then L. */
const lowerBase = (i: number): number => (i * (i + 1)) / 2;
const upperRow = (i: number, dims: number): Row => ({ base: upperBase(i, dims), from: i, to: dims });
const lowerRow = (i: number): Row => ({ base: lowerBase(i), from: 0, to: i + 1 });

/**
 * The kernel of every product here, four rows of a against two rows of b: out[m] = Σ_t a[at[m] + shift + t] b[b0 + t]
 * and out[4 + m] the same against b[b1 + t] (m = 0..3, t < length). Eight sums from six loads a step, and the rows of
 * a stay in cache while b streams: about twice the speed of one dot product at a time in V8.
 */
function dot4x2(a: Float64Array, at: Int32Array, shift: number, b: Float64Array, b0: number, b1: number, length: number, out: Float64Array): void {
  const a0 = at[0]! + shift;
  const a1 = at[1]! + shift;
  const a2 = at[2]! + shift;
  const a3 = at[3]! + shift;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let r0 = 0;
  let r1 = 0;
  let r2 = 0;
  let r3 = 0;
  for (let t = 0; t < length; t++) {
    const x0 = a[a0 + t]!;
    const x1 = a[a1 + t]!;
    const x2 = a[a2 + t]!;
    const x3 = a[a3 + t]!;
    const y0 = b[b0 + t]!;
    const y1 = b[b1 + t]!;
    s0 += x0 * y0;
    s1 += x1 * y0;
    s2 += x2 * y0;
    s3 += x3 * y0;
    r0 += x0 * y1;
    r1 += x1 * y1;
    r2 += x2 * y1;
    r3 += x3 * y1;
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
  out[4] = r0;
  out[5] = r1;
  out[6] = r2;
  out[7] = r3;
}

/** Rows i0..i0+3 taken four at a time: how many of them exist (the last block may be short), their offsets in `at` (a short block repeats its first). */
function block(i0: number, rows: number, offset: (i: number) => number, at: Int32Array): number {
  const size = Math.min(4, rows - i0);
  for (let m = 0; m < 4; m++) at[m] = offset(i0 + (m < size ? m : 0));
  return size;
}

/**
 * Adds `scale` X Xᵀ to a packed triangle of `rows` rows, X given as `rows` rows of `width` values each (one column per
 * vector): each entry is a dot product of two contiguous rows, so the triangle is read and written once per call
 * rather than once per vector.
 */
function addGram(target: Float64Array, row: (i: number) => Row, x: Float64Array, rows: number, width: number, scale: number): void {
  const at = new Int32Array(4);
  const sums = new Float64Array(8);
  const spans: Row[] = [];
  for (let i0 = 0; i0 < rows; i0 += 4) {
    const size = block(i0, rows, (i) => i * width, at);
    for (let m = 0; m < size; m++) spans[m] = row(i0 + m);
    const from = Math.min(...spans.slice(0, size).map((span) => span.from));
    const to = Math.max(...spans.slice(0, size).map((span) => span.to));
    for (let j = from; j < to; j += 2) {
      dot4x2(x, at, 0, x, j * width, Math.min(j + 1, to - 1) * width, width, sums);
      for (let m = 0; m < size; m++) {
        const span = spans[m]!;
        if (j >= span.from && j < span.to) target[span.base + j]! += scale * sums[m]!;
        if (j + 1 >= span.from && j + 1 < span.to) target[span.base + j + 1]! += scale * sums[4 + m]!;
      }
    }
  }
}

export function emptyStatistics(dims: number): FitStatistics {
  if (!Number.isInteger(dims) || dims < 1) throw new Error(`tuning statistics: dims must be a positive integer, got ${dims}`);
  return { dims, count: 0, scatter: new Float64Array(triangleSize(dims)), classes: new Map() };
}

/** Vectors added to the scatter at once: X's rows stay in cache (256 × 8 bytes each) while the triangle streams by. */
const GRAM_BLOCK = 256;

/** Adds labelled vectors to the statistics; a vector of the wrong length, a non-finite value or a class past MAX_CLASSES throws, before anything is added. */
export function addLabelledVectors(stats: FitStatistics, vectors: ReadonlyArray<{ label: string; values: ArrayLike<number> }>): void {
  const { dims } = stats;
  const labels = new Set(stats.classes.keys());
  for (const [at, { label, values }] of vectors.entries()) {
    if (values.length !== dims) throw new Error(`tuning statistics: vector ${at} has ${values.length} dimensions, the statistics ${dims}`);
    for (let i = 0; i < dims; i++) if (!Number.isFinite(values[i])) throw new Error(`tuning statistics: vector ${at} has a non-finite value at ${i}`);
    labels.add(label);
    if (labels.size > MAX_CLASSES) throw new Error(`tuning statistics: more than ${MAX_CLASSES} classes (the fit takes the most frequent)`);
  }
  const block = new Float64Array(dims * Math.min(GRAM_BLOCK, vectors.length));
  for (let start = 0; start < vectors.length; start += GRAM_BLOCK) {
    const width = Math.min(GRAM_BLOCK, vectors.length - start);
    for (let v = 0; v < width; v++) {
      const { label, values } = vectors[start + v]!;
      let entry = stats.classes.get(label);
      if (!entry) stats.classes.set(label, (entry = { count: 0, sum: new Float64Array(dims) }));
      entry.count++;
      const { sum } = entry;
      for (let i = 0; i < dims; i++) {
        const value = values[i]!;
        sum[i]! += value;
        block[i * width + v] = value;
      }
    }
    addGram(stats.scatter, (i) => upperRow(i, dims), block, dims, width, 1);
  }
  stats.count += vectors.length;
}

/*
 * Bytes: a little-endian uint32 header length, the header as UTF-8 JSON, zeros up to a multiple of 8, then the numbers
 * little-endian (Float64 for statistics, Float32 for a projection), their count fixed by the header.
 */
const HEADER_AT = 4;

function pack(header: object, parts: ReadonlyArray<Float64Array | Float32Array>): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const dataAt = Math.ceil((HEADER_AT + json.length) / 8) * 8;
  const bytes = new Uint8Array(dataAt + parts.reduce((total, part) => total + part.byteLength, 0));
  const view = new DataView(bytes.buffer);
  view.setUint32(0, json.length, true);
  bytes.set(json, HEADER_AT);
  let at = dataAt;
  for (const part of parts) {
    if (part instanceof Float64Array) for (let i = 0; i < part.length; i++, at += 8) view.setFloat64(at, part[i]!, true);
    else for (let i = 0; i < part.length; i++, at += 4) view.setFloat32(at, part[i]!, true);
  }
  return bytes;
}

/** A reader of pack's bytes: the header, checked by `schema`, then `take` the numbers in order; `done` checks that none are left. */
function unpack<Header>(bytes: Uint8Array, what: string, schema: z.ZodType<Header>) {
  const fail = (problem: string): never => {
    throw new Error(`malformed ${what}: ${problem}`);
  };
  if (bytes.length < HEADER_AT) fail(`${bytes.length} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(0, true);
  if (HEADER_AT + headerLength > bytes.length) fail(`a header of ${headerLength} bytes in ${bytes.length}`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes.subarray(HEADER_AT, HEADER_AT + headerLength)));
  } catch {
    fail('the header is not JSON');
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) fail(`header: ${parsed.error.issues.map(({ path, message }) => `${path.join('.')}: ${message}`).join('; ')}`);
  let at = Math.ceil((HEADER_AT + headerLength) / 8) * 8;
  const take = <T extends Float64Array | Float32Array>(into: T): T => {
    const size = into.BYTES_PER_ELEMENT;
    if (at + into.length * size > bytes.length) fail(`${bytes.length} bytes, short of the header's numbers`);
    for (let i = 0; i < into.length; i++, at += size) {
      const value = size === 8 ? view.getFloat64(at, true) : view.getFloat32(at, true);
      if (!Number.isFinite(value)) fail(`a non-finite number at byte ${at}`);
      into[i] = value;
    }
    return into;
  };
  const done = (): void => {
    if (at !== bytes.length) fail(`${bytes.length - at} bytes past the header's numbers`);
  };
  return { header: parsed.data!, take, done, fail };
}

const dimsSchema = z.number().int().positive();
const statisticsHeader = z.object({
  format: z.literal('tuning-statistics/1'),
  dims: dimsSchema,
  count: z.number().int().nonnegative(),
  labels: z.array(z.string()).max(MAX_CLASSES),
  counts: z.array(z.number().int().positive()),
});
const projectionHeader = z.object({
  format: z.literal('tuning-projection/1'),
  dims: dimsSchema,
  classes: z.number().int().min(2).max(MAX_CLASSES),
});

/** Bytes to keep between the job's steps: the header names the classes and their counts; then the scatter, then each class's sum. */
export function encodeStatistics(stats: FitStatistics): Uint8Array {
  const classes = [...stats.classes];
  const header = {
    format: 'tuning-statistics/1',
    dims: stats.dims,
    count: stats.count,
    labels: classes.map(([label]) => label),
    counts: classes.map(([, { count }]) => count),
  };
  return pack(header, [stats.scatter, ...classes.map(([, { sum }]) => sum)]);
}

export function decodeStatistics(bytes: Uint8Array): FitStatistics {
  const { header, take, done, fail } = unpack(bytes, 'tuning statistics', statisticsHeader);
  const { dims, count, labels, counts } = header;
  if (counts.length !== labels.length) fail(`${labels.length} labels and ${counts.length} counts`);
  if (new Set(labels).size !== labels.length) fail('a label twice');
  if (counts.reduce((total, n) => total + n, 0) !== count) fail(`the class counts do not add up to ${count}`);
  // Checked before allocating: a forged dims must not allocate more than the bytes hold.
  if (8 * (triangleSize(dims) + labels.length * dims) > bytes.length) fail(`${bytes.length} bytes for ${dims} dimensions`);
  const stats: FitStatistics = { dims, count, scatter: take(new Float64Array(triangleSize(dims))), classes: new Map() };
  for (const [c, label] of labels.entries()) stats.classes.set(label, { count: counts[c]!, sum: take(new Float64Array(dims)) });
  done();
  return stats;
}

export function encodeProjection(projection: Projection): Uint8Array {
  return pack({ format: 'tuning-projection/1', dims: projection.dims, classes: projection.classes }, [projection.matrix]);
}

export function decodeProjection(bytes: Uint8Array): Projection {
  const { header, take, done, fail } = unpack(bytes, 'tuning projection', projectionHeader);
  const { dims, classes } = header;
  if (4 * dims * dims > bytes.length) fail(`${bytes.length} bytes for ${dims} dimensions`);
  const matrix = take(new Float32Array(dims * dims));
  done();
  return { dims, matrix, classes };
}

/** Cholesky of the packed lower triangle S in place (S = L Lᵀ, L lower), four rows at a time; throws where S is not positive definite. */
function choleskyInPlace(s: Float64Array, dims: number): void {
  const at = new Int32Array(4);
  const sums = new Float64Array(8);
  for (let i0 = 0; i0 < dims; i0 += 4) {
    const size = block(i0, dims, lowerBase, at);
    // Left of the block, against the finished rows j and j + 1 at once: L[i][j] first, which L[i][j + 1] takes in.
    for (let j = 0; j < i0; j += 2) {
      // i0 is a multiple of 4, so j + 1 < i0 too.
      const [rj, rk] = [lowerBase(j), lowerBase(j + 1)];
      dot4x2(s, at, 0, s, rj, rk, j, sums);
      for (let m = 0; m < size; m++) {
        const ri = at[m]!;
        const lij = (s[ri + j]! - sums[m]!) / s[rj + j]!;
        s[ri + j] = lij;
        s[ri + j + 1] = (s[ri + j + 1]! - sums[4 + m]! - lij * s[rk + j]!) / s[rk + j + 1]!;
      }
    }
    // The block's own triangle, row by row.
    for (let m = 0; m < size; m++) {
      const i = i0 + m;
      const ri = at[m]!;
      for (let j = i0; j <= i; j++) {
        const rj = lowerBase(j);
        let value = s[ri + j]!;
        for (let t = 0; t < j; t++) value -= s[ri + t]! * s[rj + t]!;
        if (j < i) s[ri + j] = value / s[rj + j]!;
        else if (value > 0) s[ri + i] = Math.sqrt(value);
        else throw new Error(`tuning fit: the shrunk within-class scatter is not positive definite (pivot ${value} at ${i})`);
      }
    }
  }
}

/**
 * Forward substitution L z = r in place for `count` right-hand sides, L packed lower: right-hand side c holds r, then
 * z, at z[rowAt(c) + i] for i >= start(c) (its entries before start(c) are zero and not stored). Four rows of L at a
 * time against two right-hand sides, over the part they share; what one has before the other starts, and the
 * block's own triangle, one term at a time.
 */
function forwardSolveInPlace(l: Float64Array, dims: number, z: Float64Array, count: number, rowAt: (c: number) => number, start: (c: number) => number): void {
  const at = new Int32Array(4);
  const sums = new Float64Array(8);
  for (let i0 = 0; i0 < dims; i0 += 4) {
    const size = block(i0, dims, lowerBase, at);
    const finish = (c: number, shared: number, sumsAt: number): void => {
      const [first, zc] = [start(c), rowAt(c)];
      for (let m = 0; m < size; m++) {
        const i = i0 + m;
        if (i < first) continue;
        const li = at[m]!;
        let value = z[zc + i]! - (shared < i0 ? sums[sumsAt + m]! : 0);
        for (let t = first; t < Math.min(shared, i0); t++) value -= l[li + t]! * z[zc + t]!;
        for (let t = Math.max(first, i0); t < i; t++) value -= l[li + t]! * z[zc + t]!;
        z[zc + i] = value / l[li + i]!;
      }
    };
    for (let c = 0; c < count; c += 2) {
      const d = Math.min(c + 1, count - 1);
      const shared = Math.max(start(c), start(d));
      if (shared < i0) dot4x2(l, at, shared, z, rowAt(c) + shared, rowAt(d) + shared, i0 - shared, sums);
      finish(c, shared, 0);
      if (d !== c) finish(d, shared, 4);
    }
  }
}

/** The eigenpairs of the symmetric n×n matrix `a` (row-major) with an eigenvalue above RELATIVE_EIGENVALUE_FLOOR of the largest, largest first. */
function topEigenpairs(a: Float64Array, n: number): { values: number[]; vectors: Float64Array[] } {
  const evd = new EigenvalueDecomposition(Matrix.from1DArray(n, n, a), { assumeSymmetric: true });
  const all = evd.realEigenvalues;
  const order = [...all.keys()].sort((x, y) => all[y]! - all[x]!);
  const top = all[order[0]!]!;
  const kept = top > 0 ? order.filter((e) => all[e]! > RELATIVE_EIGENVALUE_FLOOR * top) : [];
  return { values: kept.map((e) => all[e]!), vectors: kept.map((e) => Float64Array.from(evd.eigenvectorMatrix.getColumn(e))) };
}

/** Fits T on the statistics; throws an Error naming the problem with no vectors, fewer than 2 classes or more than MAX_CLASSES, or no within-class spread. */
export function fitProjection(stats: FitStatistics): Projection {
  const { dims, count } = stats;
  const classes = [...stats.classes.values()];
  const n = classes.length;
  if (count === 0) throw new Error('tuning fit: no labelled vectors');
  if (n < 2) throw new Error(`tuning fit: ${n} class among the labelled vectors, at least 2 needed`);
  if (n > MAX_CLASSES) throw new Error(`tuning fit: ${n} classes, at most ${MAX_CLASSES}`);
  const at = new Int32Array(4);
  const sums = new Float64Array(8);

  // N Sw = Σ x xᵀ − Σ_c sum_c sum_cᵀ / n_c, into the lower triangle that becomes S and then L.
  const s = new Float64Array(triangleSize(dims));
  for (let i = 0; i < dims; i++) {
    for (let j = 0; j <= i; j++) s[lowerBase(i) + j] = stats.scatter[upperBase(j, dims) + i]!;
  }
  const scaledSums = new Float64Array(dims * n);
  for (const [c, { count: size, sum }] of classes.entries()) {
    for (let i = 0; i < dims; i++) scaledSums[i * n + c] = sum[i]! / Math.sqrt(size);
  }
  addGram(s, lowerRow, scaledSums, dims, n, -1);
  let trace = 0;
  for (let i = 0; i < dims; i++) trace += s[lowerBase(i) + i]! / count;
  if (!(trace > 0)) throw new Error('tuning fit: no within-class spread (every class holds copies of one vector)');
  for (let i = 0; i < s.length; i++) s[i]! *= (1 - SHRINKAGE) / count;
  for (let i = 0; i < dims; i++) s[lowerBase(i) + i]! += (SHRINKAGE * trace) / dims;
  choleskyInPlace(s, dims);
  const l = s;

  // G = L⁻¹ M as Gᵀ (C×D): row c, √(n_c/N) (μ_c − μ), solved in place. Then A = Gᵀ G (C×C) and its eigenpairs.
  const mean = new Float64Array(dims);
  for (const { sum } of classes) for (let i = 0; i < dims; i++) mean[i]! += sum[i]! / count;
  const gT = new Float64Array(n * dims);
  for (const [c, { count: size, sum }] of classes.entries()) {
    const weight = Math.sqrt(size / count);
    for (let i = 0; i < dims; i++) gT[c * dims + i] = weight * (sum[i]! / size - mean[i]!);
  }
  forwardSolveInPlace(l, dims, gT, n, (c) => c * dims, () => 0);
  const aPacked = new Float64Array(triangleSize(n));
  addGram(aPacked, lowerRow, gT, n, dims, 1);
  const a = new Float64Array(n * n);
  for (let p = 0; p < n; p++) for (let q = 0; q <= p; q++) a[p * n + q] = a[q * n + p] = aPacked[lowerBase(p) + q]!;
  const eigen = topEigenpairs(a, n);
  const k = eigen.values.length;

  // U (D×k): u_i = G a_i / √λ_i, from G's rows against the eigenvectors two at a time; Uᵀ beside it. w_i − β = √(λ_i / λ_1).
  const g = new Float64Array(dims * n);
  for (let c = 0; c < n; c++) for (let r = 0; r < dims; r++) g[r * n + c] = gT[c * dims + r]!;
  const vectors = new Float64Array(k * n);
  eigen.vectors.forEach((vector, i) => vectors.set(vector.map((value) => value / Math.sqrt(eigen.values[i]!)), i * n));
  const u = new Float64Array(dims * k);
  const uT = new Float64Array(k * dims);
  for (let r0 = 0; r0 < dims; r0 += 4) {
    const size = block(r0, dims, (r) => r * n, at);
    for (let i = 0; i < k; i += 2) {
      dot4x2(g, at, 0, vectors, i * n, Math.min(i + 1, k - 1) * n, n, sums);
      for (let m = 0; m < size; m++) {
        const r = r0 + m;
        u[r * k + i] = uT[i * dims + r] = sums[m]!;
        if (i + 1 < k) u[r * k + i + 1] = uT[(i + 1) * dims + r] = sums[4 + m]!;
      }
    }
  }
  const extra = eigen.values.map((lambda) => Math.sqrt(lambda / eigen.values[0]!));

  // L⁻¹ by its columns, as the rows of an upper triangle (L⁻ᵀ): L z = e_j.
  const inverseT = new Float64Array(triangleSize(dims));
  for (let j = 0; j < dims; j++) inverseT[upperBase(j, dims) + j] = 1;
  forwardSolveInPlace(l, dims, inverseT, dims, (j) => upperBase(j, dims), (j) => j);
  // Yᵀ (D×k), Y = diag(w − β) Uᵀ L⁻¹: Y[i][c] = (w_i − β) Σ_{r>=c} u_i[r] L⁻¹[r][c], columns c and c + 1 together over r > c.
  const yT = new Float64Array(dims * k);
  for (let i0 = 0; i0 < k; i0 += 4) {
    const size = block(i0, k, (i) => i * dims, at);
    for (let c = 0; c < dims; c += 2) {
      const d = Math.min(c + 1, dims - 1);
      const [columnC, columnD] = [upperBase(c, dims), upperBase(d, dims)];
      dot4x2(uT, at, c + 1, inverseT, columnC + c + 1, columnD + c + 1, dims - c - 1, sums);
      for (let m = 0; m < size; m++) {
        const i = i0 + m;
        yT[c * k + i] = extra[i]! * (sums[m]! + uT[i * dims + c]! * inverseT[columnC + c]!);
        if (d !== c) yT[d * k + i] = extra[i]! * sums[4 + m]!;
      }
    }
  }
  // T = β L⁻¹ + U Y: T[r][c] = β L⁻ᵀ[c][r] + U's row r against Yᵀ's row c; four rows by two columns at a time.
  const matrix = new Float32Array(dims * dims);
  const floor = (r: number, c: number): number => (c <= r ? FLOOR_WEIGHT * inverseT[upperBase(c, dims) + r]! : 0);
  for (let r0 = 0; r0 < dims; r0 += 4) {
    const size = block(r0, dims, (r) => r * k, at);
    for (let c = 0; c < dims; c += 2) {
      const d = Math.min(c + 1, dims - 1);
      dot4x2(u, at, 0, yT, c * k, d * k, k, sums);
      for (let m = 0; m < size; m++) {
        const r = r0 + m;
        matrix[r * dims + c] = sums[m]! + floor(r, c);
        if (d !== c) matrix[r * dims + d] = sums[4 + m]! + floor(r, d);
      }
    }
  }
  return { dims, matrix, classes: n };
}

/** T x, L2-normalised (a zero vector stays zero); throws on a vector of the wrong length. */
export function projectVector(projection: Projection, values: ArrayLike<number>): number[] {
  const { dims, matrix } = projection;
  if (values.length !== dims) throw new Error(`tuning projection: a vector of ${values.length} dimensions, the projection ${dims}`);
  const x = Float64Array.from(values);
  const out = new Array<number>(dims);
  let norm = 0;
  for (let r = 0; r < dims; r++) {
    let sum = 0;
    for (let c = 0, at = r * dims; c < dims; c++, at++) sum += matrix[at]! * x[c]!;
    out[r] = sum;
    norm += sum * sum;
  }
  norm = Math.sqrt(norm);
  return norm > 0 ? out.map((value) => value / norm) : out;
}
