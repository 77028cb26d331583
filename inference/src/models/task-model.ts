import type { Task } from '../contract.ts';
import type { ImageView } from '../image/view.ts';

/** One loaded model serving one task; loaded once at start and kept. */
export interface TaskModel {
  readonly task: Task;
  /** Identifies the model and its output format; changes whenever outputs would. */
  readonly modelId: string;
  /**
   * Result as sent in the response (JSON-serialisable). The view is the whole
   * image or the request's box; coordinates in results are original pixels.
   */
  predict(view: ImageView): Promise<object>;
}
