/**
 * `POST /predict` with a `text` field (contract/wire.ts): the service on a tiny CLIP folder (tiny-models.ts, whose text
 * tower maps a colour word to that colour's image vector) beside mobilenet-v2, which reads no text.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MAX_TEXT_LENGTH, textForm } from '@edge-image-search/contract/wire';
import { MOBILENET_V2_EMBEDDER } from '../src/models/embed/embedder-specs.ts';
import { cosine, png, startServer, type PredictBody, type RunningServer } from './harness.ts';
import { channelValues, CLIP_MEAN, CLIP_STD, COLOURS, unit, writeClip } from './tiny-models.ts';

let root: string;
let server: RunningServer;
let clipId: string;

before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'text-predict-'));
  const clip = writeClip(path.join(root, 'tiny-clip'));
  server = await startServer({ INFERENCE_EMBED_MODELS: `${clip},mobilenet-v2`, INFERENCE_DETECTOR: 'none', INFERENCE_POSE: 'none' });
  const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { embed_models: string[] };
  clipId = health.embed_models[0]!;
});
after(() => {
  server?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function post(form: FormData): Promise<{ status: number; body: PredictBody }> {
  const response = await fetch(`${server.baseUrl}/predict`, { method: 'POST', body: form });
  return { status: response.status, body: (await response.json()) as PredictBody };
}

/** A 120x100 PNG of one colour. */
const solidPng = (rgb: readonly number[]): Promise<Buffer> =>
  png({ data: Buffer.from(Array.from({ length: 120 * 100 }, () => rgb).flat()), width: 120, height: 100, channels: 3 });

const withFields = (form: FormData, fields: Record<string, string | Blob>): FormData => {
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  return form;
};

describe('POST /predict text', () => {
  test("a text-reading model answers the text tower's unit vector, the one its image of that colour gets", async () => {
    const { status, body } = await post(textForm('red', { embedModel: clipId }));
    assert.equal(status, 200);
    assert.deepEqual(Object.keys(body), ['embed']);
    assert.deepEqual([body.embed.model, body.embed.dim], [clipId, 3]);
    const expected = unit(channelValues(COLOURS.red, CLIP_MEAN, CLIP_STD));
    assert.ok(cosine(body.embed.vector, expected) > 0.99999);
    assert.ok(Math.abs(Math.hypot(...body.embed.vector) - 1) < 1e-5);

    const image = await server.predict(await solidPng(COLOURS.red));
    assert.ok(cosine(body.embed.vector, image.body.embed.vector) > 0.99999);
    // Without embed_model, the default (the folder's model, listed first).
    const byDefault = await post(textForm('A photo of BLUE'));
    assert.ok(cosine(byDefault.body.embed.vector, unit(channelValues(COLOURS.blue, CLIP_MEAN, CLIP_STD))) > 0.99999);
  });

  test('a model without a text tower: 400 model_reads_no_text, naming it', async () => {
    const { status, body } = await post(textForm('red', { embedModel: MOBILENET_V2_EMBEDDER.modelId }));
    assert.equal(status, 400);
    assert.equal(body.error.code, 'model_reads_no_text');
    assert.equal(body.error.message, `The embed model "${MOBILENET_V2_EMBEDDER.modelId}" reads no text: it has no text tower.`);
    const unknown = await post(textForm('red', { embedModel: 'nope' }));
    assert.deepEqual([unknown.status, unknown.body.error.code], [400, 'unknown_embed_model']);
  });

  test('text with an image, with other tasks or a box, empty or too long: 400, each with its code', async () => {
    const image = new Blob([await solidPng([128, 128, 128])]);
    const cases: [FormData, number, string][] = [
      [withFields(textForm('red'), { image }), 400, 'text_and_image'],
      [withFields(textForm('red'), { tasks: 'embed,colors' }), 400, 'text_embeds_only'],
      [withFields(textForm('red'), { tasks: 'detect' }), 400, 'text_embeds_only'],
      [withFields(textForm('red'), { box: '0,0,10,10' }), 400, 'text_embeds_only'],
      [textForm(''), 400, 'bad_text'],
      [textForm('red '.repeat(MAX_TEXT_LENGTH / 4) + 'x'), 400, 'bad_text'],
      [withFields(new FormData(), { tasks: 'embed' }), 400, 'missing_image'],
    ];
    for (const [form, status, code] of cases) {
      const answer = await post(form);
      assert.deepEqual([answer.status, answer.body.error?.code], [status, code], JSON.stringify(answer.body));
    }
    // At the bound, accepted: the tokenizer keeps what fits the model's length.
    const longest = await post(textForm('red '.repeat(MAX_TEXT_LENGTH / 4)));
    assert.equal(longest.status, 200);
  });
});
