import path from 'node:path';
import type { ModelSource } from '../runtime.ts';

/**
 * Where the converted models are and the command that makes them: all the
 * service knows of the TF.js -> ONNX converter, which runs at install time
 * (scripts/convert-models.ts, scripts/onnx-converter/) and is never loaded here.
 */

/** Where scripts/convert-models.ts writes the converted models (ignored by git). */
export const ONNX_MODEL_DIRECTORY = path.resolve(import.meta.dirname, '../../../models/onnx');

export const CONVERT_COMMAND = 'npm run convert-models -w inference';

export function onnxModelFile(source: ModelSource, directory = ONNX_MODEL_DIRECTORY): string {
  return path.join(directory, `${source.name}.onnx`);
}
