import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelSource } from '../runtime.ts';
import { readModelArtifacts } from '../tfjs-artifacts.ts';
import { convertTfjsGraph } from './convert.ts';

/** Where scripts/convert-models.ts writes the converted models (ignored by git). */
export const ONNX_MODEL_DIRECTORY = path.resolve(import.meta.dirname, '../../../models/onnx');

export const CONVERT_COMMAND = 'npm run convert-models -w inference';

export function onnxModelFile(source: ModelSource, directory = ONNX_MODEL_DIRECTORY): string {
  return path.join(directory, `${source.name}.onnx`);
}

/** Converts a model's TF.js graph for its declared outputs and writes it; returns the file. */
export function writeOnnxModel(source: ModelSource, directory = ONNX_MODEL_DIRECTORY): string {
  const bytes = convertTfjsGraph(readModelArtifacts(source), source);
  const file = onnxModelFile(source, directory);
  mkdirSync(directory, { recursive: true });
  // Written beside and renamed, so a running service never reads half a file.
  writeFileSync(`${file}.partial`, bytes);
  renameSync(`${file}.partial`, file);
  return file;
}
