/**
 * Converts every model's TF.js graph to ONNX for the ONNX runtime
 * (src/runtime/onnx/), into models/onnx/ (ignored by git). Runs as this
 * workspace's postinstall, so `npm install` and `npm ci` leave the files in
 * place, and by hand:
 *
 *   npm run convert-models -w inference      (or node inference/scripts/convert-models.ts)
 *
 * Rerun it after changing the converter or a model's declared outputs.
 */
import path from 'node:path';
import { MODEL_SOURCES } from '../src/models/registry.ts';
import { writeOnnxModel } from '../src/runtime/onnx/model-files.ts';

for (const source of MODEL_SOURCES) {
  const started = performance.now();
  const file = writeOnnxModel(source);
  console.log(`convert-models: ${source.name} -> ${path.relative(process.cwd(), file)} in ${Math.round(performance.now() - started)} ms`);
}
