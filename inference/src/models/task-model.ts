import type { Task } from '@edge-image-search/contract/wire';
import type { ImageView } from '../image/view.ts';

/** One loaded model serving one task; loaded once at start and kept. */
export interface TaskModel<Context extends unknown[] = []> {
  readonly task: Task;
  /** Identifies the model and its output format; changes whenever outputs would. */
  readonly modelId: string;
  /**
   * Result as sent in the response (JSON-serialisable). The view is the whole
   * image or the request's box; coordinates in results are original pixels.
   * `context` is what else the task takes from the request (the detect task: the embedder for its crops).
   */
  predict(view: ImageView, ...context: Context): Promise<object>;
}
