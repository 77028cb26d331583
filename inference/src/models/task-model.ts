import type { ImageView } from '../image/view.ts';

/** The tasks a /predict request can ask for; each answers under its own key. */
export const TASKS = ['embed', 'detect', 'colors'] as const;
export type Task = (typeof TASKS)[number];

export function isTask(name: string): name is Task {
  return (TASKS as readonly string[]).includes(name);
}

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
