/**
 * Converts every model's TF.js graph to ONNX for the ONNX runtime
 * (src/runtime/onnxruntime.ts), with the converter in onnx-converter/, into
 * models/onnx/ (ignored by git). Runs as this workspace's postinstall, so
 * `npm install` and `npm ci` leave the files in place, and by hand:
 *
 *   npm run convert-models -w inference      (or node inference/scripts/convert-models.ts)
 *
 * Rerun it after changing the converter or a model's declared outputs.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MODEL_SOURCES } from '../src/models/registry.ts';
import { ONNX_MODEL_DIRECTORY, onnxModelFile } from '../src/runtime/onnx/model-files.ts';
import { readModelArtifacts } from '../src/runtime/tfjs-artifacts.ts';
import { convertTfjsGraph } from './onnx-converter/convert.ts';

for (const source of MODEL_SOURCES) {
  const started = performance.now();
  const bytes = convertTfjsGraph(readModelArtifacts(source), source);
  const file = onnxModelFile(source);
  mkdirSync(ONNX_MODEL_DIRECTORY, { recursive: true });
  // Written beside and renamed, so a running service never reads half a file.
  writeFileSync(`${file}.partial`, bytes);
  renameSync(`${file}.partial`, file);
  console.log(`convert-models: ${source.name} -> ${path.relative(process.cwd(), file)} in ${Math.round(performance.now() - started)} ms`);
}
