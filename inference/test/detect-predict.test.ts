/**
 * The detect task and the box field, through the real service: real objects
 * in real images (opencv-doc_plant.jpg: a terracotta pot and a blue glass;
 * opencv-doc_aloeL.jpg: an aloe's pot; boxes checked by hand once, then held
 * with tolerance), their boxes in original pixels whatever the upload's size
 * or EXIF orientation, and crops.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { iou } from '@edge-image-search/contract/boxes';
import { GARMENT_LABELS } from '../src/models/pose/garments.ts';
import { cosine, imageBytes, norm, runUntilExit, startServer, type Box, type DetectedObject, type RunningServer } from './harness.ts';

const EMBED_DIM = 448;
/** The documented score floor, object cap and crop margin (README.md). */
const MIN_SCORE = 0.2;
const MAX_OBJECTS = 30;
const CROP_MARGIN = 0.1;
const LABEL_MAP_FILE = path.resolve(import.meta.dirname, '../config/detector-labels.json');

/** 500x333: a terracotta pot with a plant, and a blue glass to its left. */
const PLANT = 'opencv-doc_plant.jpg';
const PLANT_POT: Box = [193, 197, 368, 333];
const PLANT_GLASS: Box = [80, 186, 172, 290];
/** 1024x887: an aloe in a terracotta pot. */
const ALOE = 'opencv-doc_aloeL.jpg';
const ALOE_POT: Box = [574, 643, 852, 866];

let server: RunningServer;
let plant: Buffer;

before(async () => {
  [server, plant] = await Promise.all([startServer(), imageBytes(PLANT)]);
});

after(() => server?.stop());

describe('POST /predict detect', () => {
  test('finds the pot and the glass as "Vase and Pot", where they are', async () => {
    const { status, body } = await server.predict(plant, 'detect');
    assert.equal(status, 200, JSON.stringify(body.error));
    assert.equal(body.embed, undefined);
    assert.match(body.detect.model, /\S/);
    assertWellFormed(body.detect.objects, body.detect.types, [0, 0, 500, 333]);
    const pot = find(body.detect.objects, 'Vase and Pot', PLANT_POT);
    assert.equal(pot.label, 'vase');
    assert.ok(pot.score > 0.3, `pot score ${pot.score}`);
    const glass = find(body.detect.objects, 'Vase and Pot', PLANT_GLASS);
    assert.ok(glass.score < pot.score);
  });

  test('finds the aloe\'s pot', async () => {
    const { body } = await server.predict(await imageBytes(ALOE), 'detect');
    assertWellFormed(body.detect.objects, body.detect.types, [0, 0, 1024, 887]);
    find(body.detect.objects, 'Vase and Pot', ALOE_POT);
  });

  test('reports as types exactly the label map\'s values and the garments a pose gives', async () => {
    const { body } = await server.predict(plant, 'detect');
    const map = JSON.parse(await readFile(LABEL_MAP_FILE, 'utf8')) as Record<string, string>;
    assert.deepEqual(body.detect.types, [...new Set([...Object.values(map), ...GARMENT_LABELS])].sort());
  });

  test('drops what the label map does not name: a cat photo has no objects', async () => {
    const { status, body } = await server.predict(await imageBytes('skimage_chelsea.jpg'), 'detect');
    assert.equal(status, 200);
    assert.deepEqual(body.detect.objects, []);
  });

  test('object embeddings: unit vectors of the embed model, for the object\'s crop with a 10% margin', async () => {
    const { body } = await server.predict(plant, 'detect,embed');
    const pot = find(body.detect.objects, 'Vase and Pot', PLANT_POT);
    for (const object of body.detect.objects) {
      assert.equal(object.embedding.length, EMBED_DIM);
      assert.ok(Math.abs(norm(object.embedding) - 1) < 1e-5, `norm ${norm(object.embedding)}`);
    }
    const [x1, y1, x2, y2] = pot.box;
    const marginX = (x2 - x1) * CROP_MARGIN;
    const marginY = (y2 - y1) * CROP_MARGIN;
    const left = Math.max(0, Math.floor(x1 - marginX));
    const top = Math.max(0, Math.floor(y1 - marginY));
    const crop = await sharp(plant)
      .extract({ left, top, width: Math.min(500, Math.ceil(x2 + marginX)) - left, height: Math.min(333, Math.ceil(y2 + marginY)) - top })
      .png()
      .toBuffer();
    const cropVector = await embed(crop);
    assert.ok(cosine(pot.embedding, cropVector) > 0.999, `cosine to the crop ${cosine(pot.embedding, cropVector)}`);
    assert.ok(cosine(pot.embedding, body.embed.vector) < 0.9, 'the object embedding is not the whole image\'s');
  });

  test('boxes are in original pixels whatever the upload\'s size (also past the 2048 px working copy)', async () => {
    const reference = find((await server.predict(plant, 'detect')).body.detect.objects, 'Vase and Pot', PLANT_POT);
    for (const width of [350, 1000, 2500]) {
      const resized = await sharp(plant).resize({ width }).png().toBuffer();
      const { body } = await server.predict(resized, 'detect');
      const { width: w, height: h } = body.image;
      assert.equal(w, width);
      const expected: Box = [reference.box[0] * w / 500, reference.box[1] * h / 333, reference.box[2] * w / 500, reference.box[3] * h / 333];
      const pot = find(body.detect.objects, 'Vase and Pot', expected, 0.9);
      assert.ok(pot.box.every(Number.isInteger), `integer box ${pot.box}`);
    }
  });

  test('boxes are in displayed pixels for an EXIF-rotated JPEG', async () => {
    // Pixels stored turned a quarter left, with orientation 6 (display turned a quarter right): shows upright.
    const rotated = await sharp(plant).rotate(-90).withMetadata({ orientation: 6 }).jpeg({ quality: 95 }).toBuffer();
    const stored = await sharp(rotated).metadata();
    assert.deepEqual([stored.width, stored.height, stored.orientation], [333, 500, 6]);
    const { body } = await server.predict(rotated, 'detect');
    assert.deepEqual(body.image, { width: 500, height: 333, format: 'jpeg' });
    find(body.detect.objects, 'Vase and Pot', PLANT_POT);
    find(body.detect.objects, 'Vase and Pot', PLANT_GLASS);
  });
});

describe('POST /predict box', () => {
  test('detect runs on the box only, and reports original pixels', async () => {
    const { status, body } = await server.predict(await imageBytes(ALOE), 'detect', { box: '300,200,1024,887' });
    assert.equal(status, 200, JSON.stringify(body.error));
    assert.deepEqual(body.image, { width: 1024, height: 887, format: 'jpeg' });
    assert.deepEqual(body.box, [300, 200, 1024, 887]);
    assertWellFormed(body.detect.objects, body.detect.types, [300, 200, 1024, 887]);
    find(body.detect.objects, 'Vase and Pot', ALOE_POT);
    // A box leaving out the pot leaves out its detection.
    const above = await server.predict(await imageBytes(ALOE), 'detect', { box: '0,0,1024,560' });
    assertWellFormed(above.body.detect.objects, above.body.detect.types, [0, 0, 1024, 560]);
    assert.ok(above.body.detect.objects.every((object) => iou(object.box, ALOE_POT) === 0));
  });

  test('embed runs on the box: the same vector as the crop sent as its own image, not the whole image\'s', async () => {
    const whole = await embed(plant);
    const { body } = await server.predict(plant, 'embed', { box: '60,170,190,300' });
    assert.deepEqual(body.box, [60, 170, 190, 300]);
    const crop = await sharp(plant).extract({ left: 60, top: 170, width: 130, height: 130 }).png().toBuffer();
    const cropVector = await embed(crop);
    assert.ok(cosine(body.embed.vector, cropVector) > 0.999, `cosine to the crop ${cosine(body.embed.vector, cropVector)}`);
    assert.ok(cosine(body.embed.vector, whole) < 0.9, `cosine to the whole image ${cosine(body.embed.vector, whole)}`);
  });

  test('is clamped to the image', async () => {
    const { status, body } = await server.predict(plant, 'embed', { box: ' -50, -20 ,250,9999' });
    assert.equal(status, 200, JSON.stringify(body.error));
    assert.deepEqual(body.box, [0, 0, 250, 333]);
    const crop = await sharp(plant).extract({ left: 0, top: 0, width: 250, height: 333 }).png().toBuffer();
    assert.ok(cosine(body.embed.vector, await embed(crop)) > 0.999);
  });

  test('a malformed or empty box: 400 bad_box', async () => {
    const bad = ['', '1,2,3', '1,2,3,4,5', 'a,b,c,d', '1.5,2,30,40', '10;10;50;50', '50,10,10,40', '10,40,50,40', '500,0,600,100', '0,-90,100,0'];
    for (const box of bad) {
      const { status, body } = await server.predict(plant, 'embed,detect', { box });
      assert.equal(status, 400, `box ${JSON.stringify(box)}`);
      assert.equal(body.error.code, 'bad_box', `box ${JSON.stringify(box)}`);
    }
  });
});

describe('DETECTOR_LABELS', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'detector-labels-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  test('another map changes what is reported and the types (without the pose model, exactly its types)', async () => {
    // Made up for the test: "cat" is no product type, but it is what chelsea shows.
    const file = path.join(directory, 'labels.json');
    await writeFile(file, JSON.stringify({ cat: 'Soft Furnishing', vase: 'Vase and Pot' }));
    const other = await startServer({ DETECTOR_LABELS: file, INFERENCE_POSE: 'none' });
    try {
      const { body } = await other.predict(await imageBytes('skimage_chelsea.jpg'), 'detect');
      assert.deepEqual(body.detect.types, ['Soft Furnishing', 'Vase and Pot']);
      assert.ok(body.detect.objects.length >= 1);
      assert.equal(body.detect.objects[0]!.label, 'cat');
      assert.equal(body.detect.objects[0]!.type, 'Soft Furnishing');
    } finally {
      other.stop();
    }
  });

  test('a map naming a label the detector lacks, or a type the spec lacks, stops the service at start', async () => {
    for (const map of [{ sofa: 'Seating' }, { chair: 'Chair' }, {}]) {
      const file = path.join(directory, 'bad.json');
      await writeFile(file, JSON.stringify(map));
      const { code, errorOutput: stderr } = await runUntilExit({ DETECTOR_LABELS: file });
      assert.equal(code, 1, JSON.stringify(map));
      assert.match(stderr, /label map/, JSON.stringify(map));
    }
  });
});

async function embed(bytes: Uint8Array): Promise<number[]> {
  const { status, body } = await server.predict(bytes, 'embed');
  assert.equal(status, 200, JSON.stringify(body.error));
  return body.embed.vector;
}

/** The best-scoring object of that type overlapping the expected box by at least minIou. */
function find(objects: DetectedObject[], type: string, expected: Box, minIou = 0.7): DetectedObject {
  const match = objects.find((object) => object.type === type && iou(object.box, expected) >= minIou);
  const seen = objects.map((o) => `${o.type} ${o.score} [${o.box}] IoU ${iou(o.box, expected).toFixed(2)}`).join('; ');
  assert.ok(match, `no ${type} near [${expected.map(Math.round)}]; found: ${seen || 'nothing'}`);
  return match;
}

/** The documented invariants of a detect answer; boxes inside `within`. */
function assertWellFormed(objects: DetectedObject[], types: string[], within: Box): void {
  assert.ok(objects.length <= MAX_OBJECTS);
  for (const [index, object] of objects.entries()) {
    assert.ok(types.includes(object.type), object.type);
    assert.ok(object.score >= MIN_SCORE && object.score <= 1, `score ${object.score}`);
    if (index > 0) assert.ok(object.score <= objects[index - 1]!.score, 'sorted by score, best first');
    const [x1, y1, x2, y2] = object.box;
    assert.ok(object.box.every(Number.isInteger), `integer box ${object.box}`);
    assert.ok(x1 >= within[0] && y1 >= within[1] && x2 <= within[2] && y2 <= within[3] && x2 > x1 && y2 > y1, `box ${object.box}`);
    for (const other of objects.slice(0, index)) {
      if (other.type === object.type) assert.ok(iou(other.box, object.box) <= 0.5, 'same-type boxes overlap at most IoU 0.5');
    }
  }
}
