import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isProductType, type ProductType } from './product-types.ts';

/**
 * The label map shipped with the COCO detector. DETECTOR_LABELS names another
 * file, e.g. the map of a fashion-trained detector on a GPU host.
 */
export const DEFAULT_LABEL_MAP_FILE = path.resolve(import.meta.dirname, '../../../config/detector-labels.json');

/** Detector label -> product type; labels not in it are dropped. */
export type LabelMap = ReadonlyMap<string, ProductType>;

export class LabelMapError extends Error {
  constructor(file: string, problem: string) {
    super(`detector label map ${file}: ${problem}`);
    this.name = 'LabelMapError';
  }
}

/**
 * Reads a label map: a JSON object from the detector's label names to the
 * API's product types, e.g. {"handbag": "Bag", "chair": "Seating"}. Every key
 * must be a label the loaded detector produces and every value a product type,
 * so that the types the service reports are ones it can really find; anything
 * else stops the service at start rather than silently finding nothing.
 */
export function loadLabelMap(file: string, detectorLabels: readonly string[]): LabelMap {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (cause) {
    throw new LabelMapError(file, `not readable as JSON (${(cause as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new LabelMapError(file, 'must be a JSON object of detector label -> product type');
  }
  const known = new Set(detectorLabels);
  const map = new Map<string, ProductType>();
  for (const [label, type] of Object.entries(parsed)) {
    if (!known.has(label)) throw new LabelMapError(file, `"${label}" is not a label of the loaded detector`);
    if (typeof type !== 'string' || !isProductType(type)) {
      throw new LabelMapError(file, `"${label}" maps to ${JSON.stringify(type)}, which is not a spec product type`);
    }
    map.set(label, type);
  }
  if (map.size === 0) throw new LabelMapError(file, 'maps no label');
  return map;
}

/** The distinct product types a map can produce, sorted: what the detect task reports as `types`. */
export function mappedTypes(map: LabelMap): ProductType[] {
  return [...new Set(map.values())].sort();
}

/** The label maps shipped for the public models (inference/README.md, "Detectors in the Hugging Face layout"). */
export const SHIPPED_LABEL_MAP_FILES: readonly string[] = [
  DEFAULT_LABEL_MAP_FILE,
  ...readdirSync(path.resolve(import.meta.dirname, '../../../config/parser-labels'))
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => path.resolve(import.meta.dirname, '../../../config/parser-labels', name)),
];

/**
 * The label map of a model: `file` when a setting names one, else the first shipped map whose every label the model
 * has (the COCO map for CenterNet, DETR and external detections; a parser's for its parser); none fitting stops the
 * service, asking for the setting.
 */
export function labelMapFor(file: string | undefined, labels: readonly string[], model: string, setting: string): LabelMap {
  if (file) return loadLabelMap(file, labels);
  for (const shipped of SHIPPED_LABEL_MAP_FILES) {
    try {
      return loadLabelMap(shipped, labels);
    } catch (error) {
      if (!(error instanceof LabelMapError)) throw error;
    }
  }
  throw new LabelMapError(model, `no shipped label map fits its labels (${labels.slice(0, 12).join(', ')}${labels.length > 12 ? ', ...' : ''}): set ${setting} to a JSON map of its labels to product types`);
}
