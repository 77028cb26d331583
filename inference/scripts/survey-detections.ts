/**
 * Runs the detector on every test image and prints, per image, the raw
 * detections (the model's own labels and scores) and the objects the detect
 * task would report (label map, score floor, NMS; boxes in original pixels),
 * then totals per product type and per raw label, and timings: the detector
 * alone, and decode + detect (with each object's crop embedding) + the
 * whole-image embedding, the service's path for tasks=detect,embed. Used to
 * pick test images and for the tables in README.md.
 *
 *   node inference/scripts/survey-detections.ts [--raw-min 0.15] [--labels FILE]
 *
 * IMAGES_DIR overrides the image folder (default: test/fixtures/images of
 * the project root); --labels (or DETECTOR_LABELS) another label map;
 * INFERENCE_RUNTIME the engine and INFERENCE_EMBED_MODELS's first the embedder
 * (as for the service's default).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeImage } from '../src/image/decode.ts';
import { wholeImage } from '../src/image/view.ts';
import { loadCenterNet } from '../src/models/detect/centernet.ts';
import { DetectTask } from '../src/models/detect/detect-task.ts';
import { loadDefaultPrompts } from '../src/models/detect/prompts.ts';
import { loadColorsTask } from '../src/models/colors/colors-task.ts';
import { DEFAULT_LABEL_MAP_FILE, loadLabelMap, mappedTypes } from '../src/models/detect/label-map.ts';
import { DETECT_MIN_SCORE, selectObjects } from '../src/models/detect/objects.ts';
import { loadEmbedder } from '../src/models/embed/embedder.ts';
import { builtInSpec, modelSetFromEnv } from '../src/models/registry.ts';
import { createRuntime } from '../src/runtime/select.ts';

import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
const { values } = parseArgs({
  options: { 'raw-min': { type: 'string', default: '0.15' }, labels: { type: 'string' } },
});
const rawMin = Number(values['raw-min']);
const labelMapFile = path.resolve(values.labels ?? process.env.DETECTOR_LABELS ?? DEFAULT_LABEL_MAP_FILE);

const runtime = await createRuntime();
const detector = await loadCenterNet(runtime);
const labelMap = loadLabelMap(labelMapFile, detector.labels);
const embedder = await loadEmbedder(runtime, builtInSpec(modelSetFromEnv().embedders[0]));
const detectTask = new DetectTask(detector, labelMap, loadDefaultPrompts());
const colors = loadColorsTask();
console.log(`# ${detector.modelId}, ${embedder.modelId}, ${runtime.description}`);
console.log(`# label map ${labelMapFile}: types ${mappedTypes(labelMap).join(', ')}`);
console.log(`# raw: detections >= ${rawMin}; objects: mapped, score >= ${DETECT_MIN_SCORE}, per-type NMS\n`);

const files = (await readdir(IMAGES_DIR)).filter((file) => /\.(jpe?g|png)$/i.test(file)).sort();
const objectsPerType = new Map<string, { objects: number; images: Set<string> }>();
const rawPerLabel = new Map<string, number>();
const timings: { file: string; detectMs: number; totalMs: number; objects: number }[] = [];
for (const file of files) {
  const bytes = await readFile(path.join(IMAGES_DIR, file));
  const image = await decodeImage(bytes);
  const view = wholeImage(image);
  let started = performance.now();
  const detections = await detector.detect(view.pixels, rawMin);
  const detectMs = performance.now() - started;
  started = performance.now();
  const whole = wholeImage(await decodeImage(bytes));
  const result = await detectTask.predict(whole, { embedder, palette: (crop) => colors.palette(crop) });
  await embedder.predict(whole);
  timings.push({ file, detectMs, totalMs: performance.now() - started, objects: result.objects.length });
  detections.sort((a, b) => b.score - a.score);
  const objects = selectObjects(detections, labelMap, view);
  for (const detection of detections) {
    if (detection.score >= DETECT_MIN_SCORE) rawPerLabel.set(detection.label, (rawPerLabel.get(detection.label) ?? 0) + 1);
  }
  for (const object of objects) {
    const entry = objectsPerType.get(object.type) ?? { objects: 0, images: new Set() };
    entry.objects++;
    entry.images.add(file);
    objectsPerType.set(object.type, entry);
  }
  const raw = detections.map((d) => `${d.label} ${d.score.toFixed(2)}`).join(', ') || '-';
  const mapped = objects.map((o) => `${o.type} (${o.label}) ${o.score.toFixed(3)} [${o.box.join(',')}]`).join('; ') || '-';
  console.log(`${file} ${image.width}x${image.height}\n  raw: ${raw}\n  objects: ${mapped}`);
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const scenes = timings.filter((t) => /\.jpe?g$/i.test(t.file));
const withObjects = timings.filter((t) => t.objects > 0);
console.log(`\ndetector alone (letterbox to 512, network, reading boxes): ${mean(timings.map((t) => t.detectMs)).toFixed(0)} ms/image over ${timings.length} images`);
console.log(`decode + detect (+ object crop embeddings) + whole-image embed: ${mean(timings.map((t) => t.totalMs)).toFixed(0)} ms/image over all, ${mean(scenes.map((t) => t.totalMs)).toFixed(0)} ms over the ${scenes.length} JPEG scenes (up to 1024 px)`);
for (const t of withObjects) console.log(`  ${t.file}: ${t.objects} object(s), ${t.totalMs.toFixed(0)} ms`);
console.log('\n| type | objects | images |\n| --- | --- | --- |');
for (const [type, { objects, images }] of [...objectsPerType].sort((a, b) => b[1].objects - a[1].objects)) {
  console.log(`| ${type} | ${objects} | ${[...images].join(', ')} |`);
}
console.log(`\nraw labels scoring >= ${DETECT_MIN_SCORE} (detections, before NMS):`);
console.log([...rawPerLabel].sort((a, b) => b[1] - a[1]).map(([label, count]) => `${label} ${count}`).join(', '));
