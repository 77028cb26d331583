import type { Runtime } from './runtime.ts';

/** The runtimes INFERENCE_RUNTIME may name; the first is the default. */
export const RUNTIME_NAMES = ['onnx', 'tfjs-wasm'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/** INFERENCE_RUNTIME, checked; unset means the default. */
export function runtimeNameFromEnv(value = process.env.INFERENCE_RUNTIME): RuntimeName {
  if (!value) return RUNTIME_NAMES[0];
  if (!(RUNTIME_NAMES as readonly string[]).includes(value)) {
    throw new Error(`INFERENCE_RUNTIME must be one of ${RUNTIME_NAMES.join(', ')}, got "${value}"`);
  }
  return value as RuntimeName;
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
