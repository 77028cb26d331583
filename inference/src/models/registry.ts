import type { Runtime } from '../runtime/runtime.ts';
import { loadEmbedder } from './embed/embedder.ts';
import type { Task, TaskModel } from './task-model.ts';

export type ModelRegistry = ReadonlyMap<Task, TaskModel>;

/** Loads every task's model once; the server keeps them for its lifetime. */
export async function loadModels(runtime: Runtime): Promise<ModelRegistry> {
  return new Map<Task, TaskModel>([['embed', await loadEmbedder(runtime)]]);
}
