import type { PaletteColor, TaskResult } from '@edge-image-search/contract/wire';
import type { RgbPixels } from '../../image/decode.ts';
import type { ImageView } from '../../image/view.ts';
import type { TaskModel } from '../task-model.ts';
import { dominantColors } from './palette.ts';

/** Names the method and its parameters (palette.ts): change it whenever palettes would change. */
export const COLORS_MODEL_ID = 'lab-kmeans-v1';

/** Best first: at most 8 colours, ratios summing to 1; empty for a fully transparent image. */
export type ColorsResult = TaskResult<'colors'>;

/** The colors task: dominant colours of the view (the whole image or the request's box). No network, no runtime. */
export class ColorsTask implements TaskModel {
  readonly task = 'colors';
  readonly modelId = COLORS_MODEL_ID;

  async predict(view: ImageView): Promise<ColorsResult> {
    return { model: this.modelId, palette: this.palette(view) };
  }

  /** The palette of a view; also what each detected object gets when both tasks are asked. */
  palette(view: ImageView): PaletteColor[] {
    return dominantColors(view.pixels);
  }
}

/**
 * The colors task, its code already optimised by the JIT: the first palettes
 * of a fresh process take several times longer (about 40 ms instead of 5), so
 * a few are computed at start, on a made-up cut-out (a noisy gradient on white).
 */
export function loadColorsTask(): ColorsTask {
  const task = new ColorsTask();
  const pixels = warmUpImage(160, 120);
  for (let i = 0; i < 4; i++) task.palette({ pixels, box: [0, 0, pixels.width, pixels.height] });
  return task;
}

function warmUpImage(width: number, height: number): RgbPixels {
  const data = Buffer.alloc(width * height * 3, 255);
  let state = 1;
  for (let y = height / 4; y < (height * 3) / 4; y++) {
    for (let x = width / 4; x < (width * 3) / 4; x++) {
      state = (state * 1103515245 + 12345) >>> 0;
      const noise = state >>> 26;
      data.set([(x * 2 + noise) & 0xff, (y * 2 + noise) & 0xff, (x + y + noise) & 0xff], (y * width + x) * 3);
    }
  }
  return { data, width, height };
}
