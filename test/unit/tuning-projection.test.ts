import { beforeAll, describe, expect, it } from 'vitest';
import {
  addLabelledVectors,
  decodeProjection,
  decodeStatistics,
  emptyStatistics,
  encodeProjection,
  encodeStatistics,
  fitProjection,
  FLOOR_WEIGHT,
  MAX_CLASSES,
  projectVector,
  SHRINKAGE,
  type FitStatistics,
  type Projection,
} from '../../src/tuning/projection';

type Labelled = { label: string; values: number[] };
type Matrix = number[][];

/** Seeded uniform [0, 1) (mulberry32) and standard normal draws, so a failure can be replayed. */
function generator(seed: number): { uniform: () => number; normal: () => number } {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  return { uniform, normal };
}

const unit = (values: number[]): number[] => {
  const norm = Math.hypot(...values);
  return values.map((value) => value / norm);
};

/** Unit vectors in `classes` classes whose means differ, each a few Gaussian draws around its mean. */
function labelledVectors(seed: number, dims: number, classes: number, count: number): Labelled[] {
  const { normal } = generator(seed);
  const means = Array.from({ length: classes }, () => Array.from({ length: dims }, () => normal()));
  return Array.from({ length: count }, (_, v) => {
    const c = v % classes;
    return { label: `class ${c}`, values: unit(means[c]!.map((mean) => mean + 1.5 * normal())) };
  });
}

function statisticsOf(dims: number, vectors: Labelled[]): FitStatistics {
  const stats = emptyStatistics(dims);
  addLabelledVectors(stats, vectors);
  return stats;
}

const multiply = (a: Matrix, b: Matrix): Matrix => a.map((row) => b[0]!.map((_, j) => row.reduce((sum, value, k) => sum + value * b[k]![j]!, 0)));
const transpose = (a: Matrix): Matrix => a[0]!.map((_, j) => a.map((row) => row[j]!));
const identity = (n: number): Matrix => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
const maxAbsDifference = (a: Matrix, b: Matrix): number => Math.max(...a.flatMap((row, i) => row.map((value, j) => Math.abs(value - b[i]![j]!))));
const maxAbs = (a: Matrix): number => Math.max(...a.flat().map(Math.abs));
const projectionMatrix = (dims: number, matrix: Float32Array): Matrix => Array.from({ length: dims }, (_, r) => [...matrix.subarray(r * dims, (r + 1) * dims)]);

/** S (shrunk within-class covariance) and M (Sb = M Mᵀ) straight from the definitions, from the vectors themselves. */
function definitions(dims: number, vectors: Labelled[]): { s: Matrix; m: Matrix } {
  const n = vectors.length;
  const labels = [...new Set(vectors.map(({ label }) => label))];
  const mean = Array.from({ length: dims }, (_, i) => vectors.reduce((sum, { values }) => sum + values[i]!, 0) / n);
  const within = Array.from({ length: dims }, () => new Array<number>(dims).fill(0));
  const columns = labels.map((label) => {
    const members = vectors.filter((vector) => vector.label === label);
    const classMean = Array.from({ length: dims }, (_, i) => members.reduce((sum, { values }) => sum + values[i]!, 0) / members.length);
    for (const { values } of members) {
      for (let i = 0; i < dims; i++) for (let j = 0; j < dims; j++) within[i]![j]! += ((values[i]! - classMean[i]!) * (values[j]! - classMean[j]!)) / n;
    }
    return classMean.map((value, i) => Math.sqrt(members.length / n) * (value - mean[i]!));
  });
  const trace = within.reduce((sum, row, i) => sum + row[i]!, 0);
  const s = within.map((row, i) => row.map((value, j) => (1 - SHRINKAGE) * value + (i === j ? (SHRINKAGE * trace) / dims : 0)));
  return { s, m: transpose(columns) };
}

/** The lower-triangular L with S = L Lᵀ, entry by entry. */
function cholesky(s: Matrix): Matrix {
  const l = s.map((row) => row.map(() => 0));
  for (let i = 0; i < s.length; i++) {
    for (let j = 0; j <= i; j++) {
      const rest = s[i]![j]! - l[i]!.slice(0, j).reduce((sum, value, k) => sum + value * l[j]![k]!, 0);
      l[i]![j] = i === j ? Math.sqrt(rest) : rest / l[j]![j]!;
    }
  }
  return l;
}

/** L⁻¹ B for lower-triangular L. */
function solveLower(l: Matrix, b: Matrix): Matrix {
  const x: Matrix = [];
  for (let i = 0; i < l.length; i++) x.push(b[i]!.map((value, c) => (value - x.reduce((sum, row, k) => sum + l[i]![k]! * row[c]!, 0)) / l[i]![i]!));
  return x;
}

/** The largest eigenvalue of a symmetric positive semi-definite matrix, by power iteration. */
function largestEigenvalue(a: Matrix): number {
  let vector = unit(a.map((_, i) => 1 + i / a.length));
  let value = 0;
  for (let step = 0; step < 2000; step++) {
    const next = a.map((row) => row.reduce((sum, entry, j) => sum + entry * vector[j]!, 0));
    value = Math.hypot(...next);
    vector = next.map((entry) => entry / value);
  }
  return value;
}

const cosine = (a: number[], b: number[]): number => a.reduce((sum, value, i) => sum + value * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));

/** The share of vectors whose nearest other vector by cosine has the same label. */
function nearestNeighbourAgreement(vectors: Labelled[]): number {
  let agreeing = 0;
  for (const [v, { label, values }] of vectors.entries()) {
    let best = -Infinity;
    let bestLabel = '';
    for (const [w, other] of vectors.entries()) {
      const similarity = cosine(values, other.values);
      if (w !== v && similarity > best) [best, bestLabel] = [similarity, other.label];
    }
    if (bestLabel === label) agreeing++;
  }
  return agreeing / vectors.length;
}

describe('tuning statistics', () => {
  it('keep Σ x xᵀ as its packed upper triangle, and each class its count and sum', () => {
    const stats = statisticsOf(3, [
      { label: 'a', values: [1, 2, 3] },
      { label: 'b', values: [0, -1, 2] },
      { label: 'a', values: [2, 0, 1] },
    ]);
    expect(stats.count).toBe(3);
    // (0,0) (0,1) (0,2) (1,1) (1,2) (2,2)
    expect([...stats.scatter]).toEqual([1 + 0 + 4, 2 + 0 + 0, 3 + 0 + 2, 4 + 1 + 0, 6 - 2 + 0, 9 + 4 + 1]);
    expect([...stats.classes.keys()]).toEqual(['a', 'b']);
    expect(stats.classes.get('a')!.count).toBe(2);
    expect([...stats.classes.get('a')!.sum]).toEqual([3, 2, 4]);
    expect([...stats.classes.get('b')!.sum]).toEqual([0, -1, 2]);
  });

  it('are the same added in batches of any size as all at once', () => {
    // Multiples of 1/8 of at most 1: every product and sum is exact, so any order of adding gives the same bits.
    const { uniform } = generator(1);
    const dims = 11;
    const vectors = Array.from({ length: 300 }, (_, v) => ({ label: `l${v % 7}`, values: Array.from({ length: dims }, () => Math.floor(uniform() * 17 - 8) / 8) }));
    const atOnce = statisticsOf(dims, vectors);
    for (const size of [1, 3, 64, 257]) {
      const batched = emptyStatistics(dims);
      for (let start = 0; start < vectors.length; start += size) addLabelledVectors(batched, vectors.slice(start, start + size));
      expect(batched).toEqual(atOnce);
    }
    // Random floats: equal to rounding.
    const floats = labelledVectors(2, dims, 5, 200);
    const whole = statisticsOf(dims, floats);
    const steps = emptyStatistics(dims);
    for (let start = 0; start < floats.length; start += 30) addLabelledVectors(steps, floats.slice(start, start + 30));
    steps.scatter.forEach((value, i) => expect(value).toBeCloseTo(whole.scatter[i]!, 12));
  });

  it('round-trip through their bytes exactly, carried from step to step', () => {
    const dims = 9;
    const vectors = labelledVectors(3, dims, 4, 90).map((vector, v) => ({ ...vector, label: v % 3 ? vector.label : 'catégorie "ä" 🙂' }));
    let bytes = encodeStatistics(emptyStatistics(dims));
    for (let start = 0; start < vectors.length; start += 20) {
      const stats = decodeStatistics(bytes);
      addLabelledVectors(stats, vectors.slice(start, start + 20));
      bytes = encodeStatistics(stats);
    }
    const decoded = decodeStatistics(bytes);
    const direct = emptyStatistics(dims);
    for (let start = 0; start < vectors.length; start += 20) addLabelledVectors(direct, vectors.slice(start, start + 20));
    expect(decoded).toEqual(direct);
    expect(encodeStatistics(decoded)).toEqual(bytes);
    // The numbers are nearly all of it: the triangle and the sums, 8 bytes each.
    expect(bytes.length - 8 * (45 + 5 * dims)).toBeLessThan(200);
    expect(decodeStatistics(encodeStatistics(emptyStatistics(4)))).toEqual(emptyStatistics(4));
  });

  it('refuse malformed bytes with an Error that says so', () => {
    const bytes = encodeStatistics(statisticsOf(3, labelledVectors(4, 3, 2, 10)));
    const headerLength = new DataView(bytes.buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + headerLength))) as Record<string, unknown>;
    const withHeader = (changes: Record<string, unknown>): Uint8Array => {
      const json = new TextEncoder().encode(JSON.stringify({ ...header, ...changes }));
      const dataAt = Math.ceil((4 + json.length) / 8) * 8;
      const out = new Uint8Array(dataAt + bytes.length - Math.ceil((4 + headerLength) / 8) * 8);
      new DataView(out.buffer).setUint32(0, json.length, true);
      out.set(json, 4);
      out.set(bytes.subarray(Math.ceil((4 + headerLength) / 8) * 8), dataAt);
      return out;
    };
    expect(decodeStatistics(withHeader({}))).toEqual(decodeStatistics(bytes));
    const nan = bytes.slice();
    new DataView(nan.buffer).setFloat64(nan.length - 8, Number.NaN, true);
    const notJson = bytes.slice();
    notJson[4] = 0x7b + 1;
    const cases: [Uint8Array, RegExp][] = [
      [new Uint8Array(0), /malformed tuning statistics: 0 bytes/],
      [bytes.subarray(0, bytes.length - 8), /short of the header's numbers/],
      [new Uint8Array([...bytes, 0, 0, 0, 0, 0, 0, 0, 0]), /8 bytes past the header's numbers/],
      [Uint8Array.from([255, 255, 0, 0, 1, 2]), /a header of 65535 bytes in 6/],
      [notJson, /the header is not JSON/],
      [withHeader({ format: 'tuning-projection/1' }), /header: .*format/],
      [withHeader({ count: 11 }), /do not add up to 11/],
      [withHeader({ counts: [5] }), /2 labels and 1 counts/],
      [withHeader({ labels: ['x', 'x'] }), /a label twice/],
      [withHeader({ dims: 1e6 }), /bytes for 1000000 dimensions/],
      [withHeader({ dims: -3 }), /header: .*dims/],
      [nan, /a non-finite number/],
    ];
    for (const [malformed, message] of cases) expect(() => decodeStatistics(malformed)).toThrow(message);
  });

  it('refuse a vector of the wrong length, a non-finite value, or a class past MAX_CLASSES, adding nothing of the batch', () => {
    const stats = statisticsOf(3, [{ label: 'a', values: [1, 0, 0] }]);
    const before = encodeStatistics(stats);
    expect(() => addLabelledVectors(stats, [{ label: 'a', values: [0, 1, 0] }, { label: 'b', values: [1, 2] }])).toThrow(/vector 1 has 2 dimensions, the statistics 3/);
    expect(() => addLabelledVectors(stats, [{ label: 'a', values: [0, Number.NaN, 0] }])).toThrow(/non-finite/);
    const many = Array.from({ length: MAX_CLASSES }, (_, c) => ({ label: `c${c}`, values: [1, 0, 0] }));
    expect(() => addLabelledVectors(stats, many)).toThrow(new RegExp(`more than ${MAX_CLASSES} classes`));
    expect(encodeStatistics(stats)).toEqual(before);
    addLabelledVectors(stats, many.slice(1));
    expect(stats.classes.size).toBe(MAX_CLASSES);
    expect(() => emptyStatistics(0)).toThrow(/positive integer/);
  });
});

describe('tuning projection fit', () => {
  it('refuses statistics with no vectors or fewer than 2 classes, naming the problem', () => {
    expect(() => fitProjection(emptyStatistics(4))).toThrow(/no labelled vectors/);
    expect(() => fitProjection(statisticsOf(4, labelledVectors(5, 4, 1, 20)))).toThrow(/1 class .*at least 2/);
    const copies = statisticsOf(2, [
      { label: 'a', values: [1, 0] },
      { label: 'b', values: [0, 1] },
    ]);
    expect(() => fitProjection(copies)).toThrow(/no within-class spread/);
  });

  it('matches a case worked by hand (D = 2)', () => {
    // Means (±1, 0), spread (0, ±1) within each: Sw = diag(0, 1), S = 0.7 Sw + 0.3 (1/2) I = diag(0.15, 0.85).
    // M = [[√½, −√½], [0, 0]]: one direction, u = e₁, weight 1 + β; e₂ keeps β. T = diag(1.2 / √0.15, 0.2 / √0.85).
    const stats = statisticsOf(2, [
      { label: 'a', values: [1, 1] },
      { label: 'a', values: [1, -1] },
      { label: 'b', values: [-1, 1] },
      { label: 'b', values: [-1, -1] },
    ]);
    const projection = fitProjection(stats);
    expect(SHRINKAGE).toBe(0.3);
    expect(FLOOR_WEIGHT).toBe(0.2);
    expect(projection.dims).toBe(2);
    expect(projection.classes).toBe(2);
    const expected = [1.2 / Math.sqrt(0.15), 0, 0, 0.2 / Math.sqrt(0.85)];
    [...projection.matrix].forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
    const [x, y] = projectVector(projection, [1, 1]);
    expect(x).toBeCloseTo(expected[0]! / Math.hypot(expected[0]!, expected[3]!), 6);
    expect(y).toBeCloseTo(expected[3]! / Math.hypot(expected[0]!, expected[3]!), 6);
  });

  it('whitens alone, T = β L⁻¹, where the class means coincide', () => {
    // Both means 0, Sw = I, S = I: no direction between the classes, every direction at the floor weight.
    const stats = statisticsOf(2, [
      { label: 'a', values: [1, 1] },
      { label: 'a', values: [-1, -1] },
      { label: 'b', values: [1, -1] },
      { label: 'b', values: [-1, 1] },
    ]);
    const expected = [FLOOR_WEIGHT, 0, 0, FLOOR_WEIGHT];
    [...fitProjection(stats).matrix].forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 6));
  });

  it.each([
    { dims: 13, classes: 6, count: 150 },
    { dims: 16, classes: 3, count: 90 },
    // More classes than dimensions: at most D directions.
    { dims: 10, classes: 14, count: 140 },
  ])('gives T = (βI + (G Gᵀ / λ₁)^½) L⁻¹ on random data (D = $dims, $classes classes)', ({ dims, classes, count }) => {
    const vectors = labelledVectors(dims * 100 + classes, dims, classes, count);
    const stats = emptyStatistics(dims);
    for (let start = 0; start < count; start += 40) addLabelledVectors(stats, vectors.slice(start, start + 40));
    const projection = fitProjection(stats);
    expect(projection.classes).toBe(classes);
    // W = T L must be β I plus the positive semi-definite square root of G Gᵀ / λ₁, G = L⁻¹ M: symmetric, W − βI ⪰ 0
    // with largest eigenvalue 1, and (W − βI)² λ₁ = G Gᵀ. That pins T (the square root is unique) without an eigensolver.
    const { s, m } = definitions(dims, vectors);
    const l = cholesky(s);
    const g = solveLower(l, m);
    const ggT = multiply(g, transpose(g));
    const lambda1 = largestEigenvalue(ggT);
    const wMinusFloor = multiply(projectionMatrix(dims, projection.matrix), l).map((row, i) => row.map((value, j) => value - (i === j ? FLOOR_WEIGHT : 0)));
    const scale = maxAbs(wMinusFloor);
    expect(maxAbsDifference(wMinusFloor, transpose(wMinusFloor))).toBeLessThan(1e-5 * scale);
    expect(largestEigenvalue(wMinusFloor)).toBeCloseTo(1, 4);
    const squared = multiply(wMinusFloor, wMinusFloor).map((row) => row.map((value) => value * lambda1));
    expect(maxAbsDifference(squared, ggT)).toBeLessThan(1e-5 * maxAbs(ggT));
    const { normal } = generator(9);
    for (let trial = 0; trial < 20; trial++) {
      const x = Array.from({ length: dims }, normal);
      const quadratic = x.reduce((sum, xi, i) => sum + xi * wMinusFloor[i]!.reduce((inner, value, j) => inner + value * x[j]!, 0), 0);
      expect(quadratic).toBeGreaterThan(-1e-5 * scale * dims);
    }
    // And so T S Tᵀ = W²: the within-class scatter whitened, then weighted.
    const t = projectionMatrix(dims, projection.matrix);
    const w = wMinusFloor.map((row, i) => row.map((value, j) => value + (i === j ? FLOOR_WEIGHT : 0)));
    expect(maxAbsDifference(multiply(multiply(t, s), transpose(t)), multiply(w, w))).toBeLessThan(1e-5);
    expect(maxAbsDifference(multiply(solveLower(l, identity(dims)), l), identity(dims))).toBeLessThan(1e-9);
  });

  it('brings the nearest neighbours by cosine into the same class far more often, on held-out vectors', () => {
    // Classes apart along 3 directions, buried in wider within-class noise along the other 29.
    const dims = 32;
    const classes = 6;
    const { normal } = generator(11);
    const means = Array.from({ length: classes }, () => Array.from({ length: 3 }, () => 0.7 * normal()));
    const draw = (count: number): Labelled[] =>
      Array.from({ length: count }, (_, v) => {
        const c = v % classes;
        const values = Array.from({ length: dims }, (_, i) => (i < 3 ? means[c]![i]! + 0.25 * normal() : normal()));
        return { label: `c${c}`, values: unit(values) };
      });
    const projection = fitProjection(statisticsOf(dims, draw(600)));
    const heldOut = draw(180);
    const before = nearestNeighbourAgreement(heldOut);
    const after = nearestNeighbourAgreement(heldOut.map(({ label, values }) => ({ label, values: projectVector(projection, values) })));
    expect(before).toBeLessThan(0.45);
    expect(after).toBeGreaterThan(before + 0.35);
  });
});

describe('tuning projection', () => {
  const dims = 12;
  let projection: Projection;
  beforeAll(() => {
    projection = fitProjection(statisticsOf(dims, labelledVectors(12, dims, 4, 80)));
  });

  it('maps a vector to unit length, a zero vector to zero, and refuses a wrong length', () => {
    const { normal } = generator(13);
    for (let trial = 0; trial < 10; trial++) {
      const projected = projectVector(projection, Array.from({ length: dims }, normal));
      expect(projected).toHaveLength(dims);
      expect(Math.hypot(...projected)).toBeCloseTo(1, 12);
    }
    expect(projectVector(projection, new Float32Array(dims))).toEqual(new Array(dims).fill(0));
    expect(() => projectVector(projection, new Array(dims + 1).fill(0))).toThrow(/13 dimensions, the projection 12/);
  });

  it('is T x normalised', () => {
    const x = labelledVectors(14, dims, 2, 1)[0]!.values;
    const t = projectionMatrix(dims, projection.matrix);
    const direct = unit(t.map((row) => row.reduce((sum, value, j) => sum + value * x[j]!, 0)));
    projectVector(projection, x).forEach((value, i) => expect(value).toBeCloseTo(direct[i]!, 12));
  });

  it('round-trips through its bytes exactly and refuses malformed ones', () => {
    const bytes = encodeProjection(projection);
    const decoded = decodeProjection(bytes);
    expect(decoded).toEqual(projection);
    expect(encodeProjection(decoded)).toEqual(bytes);
    expect(bytes.length - 4 * dims * dims).toBeLessThan(80);
    expect(() => decodeProjection(bytes.subarray(0, bytes.length - 4))).toThrow(/malformed tuning projection: .*short of the header's numbers/);
    expect(() => decodeProjection(encodeStatistics(emptyStatistics(dims)))).toThrow(/malformed tuning projection: header: .*format/);
    expect(() => decodeProjection(Uint8Array.of(1, 0))).toThrow(/malformed tuning projection: 2 bytes/);
  });
});
