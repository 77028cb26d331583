import type { RgbPixels } from '../image/decode.ts';
import type { Float32Tensor } from '../runtime/runtime.ts';

/** A uniform grey square: the warm-up input that initialises a model's kernels before it serves. */
export const greyPixels = (size: number): RgbPixels => ({ data: Buffer.alloc(size * size * 3, 0x80), width: size, height: size });

/**
 * Pixels already resized to fit, placed at (left, top) on a black `size` x `size` square: an NHWC input of RGB as
 * float 0-255, for the models that take a padded square (CenterNet's letterbox, MoveNet's crop around a person).
 */
export function onBlackSquare(pixels: RgbPixels, size: number, left = 0, top = 0): Float32Tensor {
  const data = new Float32Array(size * size * 3);
  const rowLength = pixels.width * 3;
  for (let y = 0; y < pixels.height; y++) {
    const from = y * rowLength;
    const to = ((top + y) * size + left) * 3;
    for (let i = 0; i < rowLength; i++) data[to + i] = pixels.data[from + i]!;
  }
  return { data, shape: [1, size, size, 3] };
}

/** Pixels mirrored left to right: a mirrored view without resizing again. */
export function mirrorPixels({ data, width, height }: RgbPixels): RgbPixels {
  const mirrored = Buffer.alloc(data.length);
  for (let y = 0; y < height; y++) {
    const row = y * width * 3;
    for (let x = 0; x < width; x++) {
      const from = row + x * 3;
      const to = row + (width - 1 - x) * 3;
      mirrored[to] = data[from]!;
      mirrored[to + 1] = data[from + 1]!;
      mirrored[to + 2] = data[from + 2]!;
    }
  }
  return { data: mirrored, width, height };
}
