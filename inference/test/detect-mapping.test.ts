/**
 * The detect task's pure parts, without the service: label maps, mapping
 * raw detections to objects (score floor, per-type NMS, cap, coordinates),
 * and cropping views.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RgbPixels } from '../src/image/decode.ts';
import { clampBox, cropView, type Box, type ImageView } from '../src/image/view.ts';
import { COCO_LABELS } from '../src/models/detect/coco-labels.ts';
import type { Detection } from '../src/models/detect/detector.ts';
import { DEFAULT_LABEL_MAP_FILE, LabelMapError, loadLabelMap, mappedTypes, type LabelMap } from '../src/models/detect/label-map.ts';
import { MAX_DETECTED_OBJECTS } from '@edge-image-search/contract/wire';
import { cropBoxWithMargin, selectObjects } from '../src/models/detect/objects.ts';
import { iou } from '@edge-image-search/contract/boxes';
import { PRODUCT_TYPES } from '../src/models/detect/product-types.ts';

const MAP: LabelMap = new Map([
  ['chair', 'Seating'],
  ['couch', 'Seating'],
  ['bed', 'Bed'],
  ['handbag', 'Bag'],
]);

/** A view whose working pixels are the original itself. */
function view(width: number, height: number): ImageView {
  return { pixels: { data: Buffer.alloc(width * height * 3), width, height }, box: [0, 0, width, height] };
}

function detection(label: string, score: number, box: Box): Detection {
  return { label, score, box };
}

describe('label maps', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'label-map-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  async function write(content: string): Promise<string> {
    const file = path.join(directory, `${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, content);
    return file;
  }

  test('the shipped map names COCO labels and spec types, and its types are its distinct values', () => {
    const map = loadLabelMap(DEFAULT_LABEL_MAP_FILE, COCO_LABELS);
    assert.deepEqual(mappedTypes(map), ['Bag', 'Bed', 'Clock', 'Seating', 'Table', 'Vase and Pot']);
    assert.equal(map.get('handbag'), 'Bag');
    assert.equal(map.get('dining table'), 'Table');
    assert.equal(map.get('person'), undefined);
    assert.equal(map.get('tie'), undefined);
    const specTypes = new Set<string>(Object.values(PRODUCT_TYPES).flat());
    for (const type of map.values()) assert.ok(specTypes.has(type), type);
  });

  test('refuses unknown labels, non-spec types, empty maps and non-objects', async () => {
    const cases = ['{"sofa": "Seating"}', '{"chair": "Chair"}', '{"chair": 3}', '{}', '["chair"]', 'null', '{"chair": "Seating",'];
    for (const content of cases) {
      const file = await write(content);
      assert.throws(() => loadLabelMap(file, COCO_LABELS), LabelMapError, content);
    }
  });

  test('a map for another detector works with that detector\'s labels', async () => {
    const file = await write('{"t-shirt": "Top", "jeans": "Bottom", "sneaker": "Shoe", "tote": "Bag"}');
    const map = loadLabelMap(file, ['t-shirt', 'jeans', 'sneaker', 'tote', 'sock']);
    assert.deepEqual(mappedTypes(map), ['Bag', 'Bottom', 'Shoe', 'Top']);
  });
});

describe('selectObjects', () => {
  test('maps labels to types and drops unmapped labels and scores under the floor', () => {
    const objects = selectObjects(
      [
        detection('person', 0.9, [0, 0, 50, 50]),
        detection('handbag', 0.6, [10, 10, 40, 40]),
        detection('chair', 0.19, [60, 60, 90, 90]),
        detection('bed', 0.2, [0, 50, 100, 100]),
      ],
      MAP,
      view(100, 100),
    );
    assert.deepEqual(objects, [
      { type: 'Bag', label: 'handbag', score: 0.6, box: [10, 10, 40, 40] },
      { type: 'Bed', label: 'bed', score: 0.2, box: [0, 50, 100, 100] },
    ]);
  });

  test('suppresses overlapping boxes of the same type, also across labels, but not across types', () => {
    const objects = selectObjects(
      [
        detection('couch', 0.5, [0, 0, 100, 60]),
        detection('chair', 0.7, [2, 0, 100, 62]),
        detection('bed', 0.4, [0, 0, 100, 60]),
        detection('chair', 0.3, [0, 70, 30, 100]),
      ],
      MAP,
      view(100, 100),
    );
    assert.deepEqual(
      objects.map((o) => [o.label, o.score]),
      [['chair', 0.7], ['bed', 0.4], ['chair', 0.3]],
    );
  });

  test('keeps the best MAX_DETECTED_OBJECTS', () => {
    const many = Array.from({ length: 50 }, (_, i) => detection('handbag', 0.2 + i / 100, [i * 10, 0, i * 10 + 8, 8]));
    const objects = selectObjects(many, MAP, view(1000, 10));
    assert.equal(objects.length, MAX_DETECTED_OBJECTS);
    assert.equal(objects[0]!.score, many[49]!.score);
    assert.ok(objects.every((o, i) => i === 0 || o.score <= objects[i - 1]!.score));
  });

  test('moves boxes from a scaled, cropped view to original pixels, clamped and rounded', () => {
    // Working pixels 200x100 showing the original's [100, 50, 500, 250]: 2 original px per pixel.
    const scaled: ImageView = { pixels: { data: Buffer.alloc(200 * 100 * 3), width: 200, height: 100 }, box: [100, 50, 500, 250] };
    const [object] = selectObjects([detection('bed', 0.5, [-10, 10.2, 150.3, 120])], MAP, scaled);
    assert.deepEqual(object!.box, [100, 70, 401, 250]);
    // Boxes wholly outside the view, or flat after rounding, are dropped.
    assert.deepEqual(selectObjects([detection('bed', 0.5, [210, 0, 260, 50]), detection('bed', 0.5, [5, 5, 5.1, 50])], MAP, scaled), []);
  });
});

describe('views', () => {
  const width = 7;
  const height = 5;
  const pixels: RgbPixels = { data: Buffer.from(Array.from({ length: width * height * 3 }, (_, i) => i % 256)), width, height };

  test('cropView of an unscaled view copies exactly the box\'s pixels', () => {
    const crop = cropView({ pixels, box: [0, 0, width, height] }, [2, 1, 5, 4]);
    assert.deepEqual(crop.box, [2, 1, 5, 4]);
    assert.equal(crop.pixels.width, 3);
    assert.equal(crop.pixels.height, 3);
    for (let y = 0; y < 3; y++) {
      for (let x = 0; x < 3; x++) {
        const from = ((y + 1) * width + x + 2) * 3;
        assert.deepEqual([...crop.pixels.data.subarray((y * 3 + x) * 3, (y * 3 + x) * 3 + 3)], [...pixels.data.subarray(from, from + 3)]);
      }
    }
  });

  test('cropView of a scaled view widens to whole working pixels and reports the area they cover', () => {
    // 7x5 working pixels for a 70x50 original.
    const crop = cropView({ pixels, box: [0, 0, 70, 50] }, [15, 10, 31, 29]);
    assert.deepEqual(crop.box, [10, 10, 40, 30]);
    assert.deepEqual([crop.pixels.width, crop.pixels.height], [3, 2]);
  });

  test('clampBox keeps the part inside the image, or null', () => {
    assert.deepEqual(clampBox([-5, -5, 3, 900], 10, 20), [0, 0, 3, 20]);
    assert.equal(clampBox([10, 0, 20, 5], 10, 20), null);
    assert.equal(clampBox([0, 20, 5, 30], 10, 20), null);
  });

  test('cropBoxWithMargin adds 10% a side, clamped to the view', () => {
    assert.deepEqual(cropBoxWithMargin([10, 20, 60, 120], view(100, 200)), [5, 10, 65, 130]);
    assert.deepEqual(cropBoxWithMargin([0, 0, 100, 200], view(100, 200)), [0, 0, 100, 200]);
  });

  test('iou', () => {
    assert.equal(iou([0, 0, 10, 10], [0, 0, 10, 10]), 1);
    assert.equal(iou([0, 0, 10, 10], [10, 0, 20, 10]), 0);
    assert.equal(iou([0, 0, 10, 10], [5, 0, 15, 10]), 50 / 150);
  });
});
