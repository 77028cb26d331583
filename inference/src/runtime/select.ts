import { choiceSetting } from '../settings.ts';
import type { Runtime } from './runtime.ts';

/** The runtimes INFERENCE_RUNTIME may name; the first is the default. */
export const RUNTIME_NAMES = ['onnx', 'tfjs-wasm'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/** INFERENCE_RUNTIME, checked; unset means the default. */
export function runtimeNameFromEnv(env: NodeJS.ProcessEnv = process.env): RuntimeName {
  return choiceSetting(env, 'INFERENCE_RUNTIME', RUNTIME_NAMES);
}

/** Imports only the chosen engine: each loads a large native or wasm binary. */
export async function createRuntime(name: RuntimeName = runtimeNameFromEnv()): Promise<Runtime> {
  switch (name) {
    case 'onnx':
      return (await import('./onnxruntime.ts')).createOnnxRuntime();
    case 'tfjs-wasm':
      return (await import('./tfjs-wasm.ts')).createTfjsWasmRuntime();
  }
}
