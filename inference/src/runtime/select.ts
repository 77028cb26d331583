import { choiceSetting } from '../settings.ts';
import { executionProvidersFromEnv, onCpuAlone } from './onnx/providers.ts';
import type { RunClasses, Runtime } from './runtime.ts';

/** The runtimes INFERENCE_RUNTIME may name; the first is the default. */
export const RUNTIME_NAMES = ['onnx', 'tfjs-wasm'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/** INFERENCE_RUNTIME, checked; unset means the default. */
export function runtimeNameFromEnv(env: NodeJS.ProcessEnv = process.env): RuntimeName {
  return choiceSetting(env, 'INFERENCE_RUNTIME', RUNTIME_NAMES);
}

/** Whether the runtime runs on the CPU alone: tfjs-wasm always, ONNX unless its providers name an accelerator. */
export function runsOnCpuAlone(name: RuntimeName, env: NodeJS.ProcessEnv = process.env): boolean {
  return name === 'tfjs-wasm' || onCpuAlone(executionProvidersFromEnv(env));
}

/**
 * Imports only the chosen engine: each loads a large native or wasm binary. `serves`: the classes of runs it has
 * engine threads for (ONNX; tfjs-wasm runs everything on the main thread).
 */
export async function createRuntime(name: RuntimeName = runtimeNameFromEnv(), serves: RunClasses = 'both'): Promise<Runtime> {
  switch (name) {
    case 'onnx':
      return (await import('./onnxruntime.ts')).createOnnxRuntime({ serves });
    case 'tfjs-wasm':
      return (await import('./tfjs-wasm.ts')).createTfjsWasmRuntime();
  }
}
