/**
 * A labelled catalog the tests and `npm run eval` build: flat shapes (circle, square, triangle, ring, cross) drawn in
 * colours that say nothing of the shape, on backgrounds that say nothing either, at varied sizes and places. An
 * embedding off the shelf ranks them much by colour; a shop that labels them by shape wants them ranked by shape:
 * what tuning on a label field is for (docs/decisions.md, "Tuning on a label field"). Pure (SVG text), so that the
 * Worker's tests can list it; the fixture server renders it (`/shapes/<name>`).
 */
export const SHAPES = ['circle', 'square', 'triangle', 'ring', 'cross'] as const;
export type Shape = (typeof SHAPES)[number];

const COLOURS = ['#d62828', '#2a9d8f', '#264653', '#e9c46a', '#8e44ad', '#f4a261'];
const SIDE = 256;

export type ShapeImage = { name: string; shape: Shape; svg: string };

/** A small deterministic generator (an LCG), so that every run draws the same catalog. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

function draw(shape: Shape, cx: number, cy: number, r: number, fill: string): string {
  switch (shape) {
    case 'circle':
      return `<circle cx="${cx}" cy="${cy}" r="${r}" fill="${fill}"/>`;
    case 'square':
      return `<rect x="${cx - r}" y="${cy - r}" width="${2 * r}" height="${2 * r}" fill="${fill}"/>`;
    case 'triangle':
      return `<polygon points="${cx},${cy - r} ${cx - r},${cy + r * 0.8} ${cx + r},${cy + r * 0.8}" fill="${fill}"/>`;
    case 'ring':
      return `<circle cx="${cx}" cy="${cy}" r="${r * 0.8}" fill="none" stroke="${fill}" stroke-width="${r * 0.3}"/>`;
    case 'cross':
      return `<rect x="${cx - r}" y="${cy - r * 0.3}" width="${2 * r}" height="${r * 0.6}" fill="${fill}"/><rect x="${cx - r * 0.3}" y="${cy - r}" width="${r * 0.6}" height="${2 * r}" fill="${fill}"/>`;
  }
}

/** `perShape` images of each shape, named `<shape>-<k>`; `seed` draws another catalog of the same kind. */
export function shapeCatalog(perShape: number, seed = 7): ShapeImage[] {
  const random = generator(seed);
  const pick = () => COLOURS[Math.floor(random() * COLOURS.length)]!;
  return SHAPES.flatMap((shape) =>
    Array.from({ length: perShape }, (_, k) => {
      const fill = pick();
      const drawn = pick();
      const background = drawn === fill ? '#ffffff' : drawn;
      const r = 40 + random() * 40;
      const [cx, cy] = [100 + random() * 56, 100 + random() * 56];
      const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIDE}" height="${SIDE}"><rect width="${SIDE}" height="${SIDE}" fill="${background}"/>${draw(shape, cx, cy, r, fill)}</svg>`;
      return { name: `${shape}-${k}`, shape, svg };
    }),
  );
}
