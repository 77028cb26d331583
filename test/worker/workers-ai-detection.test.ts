import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { httpInference } from '../../src/ports/inference/http';
import { inference } from '../../src/ports/inference';
import { InferenceUnavailableError, type Inference } from '../../src/ports/inference/types';
import { DETR_MODEL, parseDetrOutput, withWorkersAiDetection } from '../../src/ports/inference/workers-ai-detection';
import worker from '../../src/index';
import { FakeWorkersAi, serviceDetections, type DetrObject } from '../fakes/workers-ai';
import { basicAuth, createApp, fixtureUrl, insertAndWait, type UploadBody } from './helpers';

const PLANT = 'opencv-doc_plant.jpg'; // 500x333, a pot the COCO detector finds
const bytesOf = async (file: string): Promise<Uint8Array> => new Uint8Array(await (await fetch(fixtureUrl(`/images/${file}`))).arrayBuffer());
const service = (): Inference => httpInference(env.INFERENCE_URL, { timeoutMs: 30_000, secret: env.INFERENCE_SECRET, retries: 0 });
const detr = (label: string, score: number, [xmin, ymin, xmax, ymax]: number[]): DetrObject => ({ label, score, box: { xmin: xmin!, ymin: ymin!, xmax: xmax!, ymax: ymax! } });

describe('Workers AI detection adapter, against an in-test fake of the AI binding', () => {
  let plant: Uint8Array;
  beforeAll(async () => {
    plant = await bytesOf(PLANT);
  });

  it('sends the image bytes to DETR and has the service finish its detections with the same rules', async () => {
    const ai = new FakeWorkersAi(async () => [
      detr('person', 0.99, [0, 0, 120, 300]), // no product type, and nothing it wears shows
      detr('vase', 0.91, [190.3, 198.6, 371.2, 330.9]),
      detr('dining table', 0.12, [0, 250, 500, 333]), // under the score floor
    ]);
    const prediction = await withWorkersAiDetection(service(), ai, { retries: 0 }).predict(plant, ['embed', 'detect', 'colors']);
    expect(ai.images).toEqual([plant]);
    // DETR's, with the pose model that looks at its people.
    expect(prediction.detect.model).toMatch(new RegExp(`^${DETR_MODEL}\\+movenet`));
    expect(prediction.detect.objects.map(({ type, label, score, box }) => ({ type, label, score, box }))).toEqual([
      { type: 'Vase and Pot', label: 'vase', score: 0.91, box: [190, 199, 371, 331] },
    ]);
    const [pot] = prediction.detect.objects;
    expect(pot!.embedding).toHaveLength(prediction.embed.dim);
    expect(pot!.colors?.length).toBeGreaterThan(0);
    expect(prediction.colors.palette.length).toBeGreaterThan(0);
  });

  it('finds what the people DETR boxes wear, as with the own detector of the service', async () => {
    const ai = new FakeWorkersAi(async () => [detr('person', 0.95, [34, 81, 168, 473])]);
    const prediction = await withWorkersAiDetection(service(), ai, { retries: 0 }).predict(await bytesOf('opencv-doc_basketball1.jpg'), ['embed', 'detect']);
    expect(prediction.detect.objects.map((object) => object.type).sort()).toEqual(['Bottom', 'Shoe', 'Shoe', 'Top']);
    expect(prediction.detect.objects.every((object) => object.label.startsWith('person/'))).toBe(true);
  });

  it('keeps detection inside a search box', async () => {
    const ai = new FakeWorkersAi(async () => [detr('vase', 0.8, [190, 199, 371, 331]), detr('chair', 0.7, [10, 10, 100, 100])]);
    const prediction = await withWorkersAiDetection(service(), ai, { retries: 0 }).predict(plant, ['embed', 'detect'], { box: [150, 150, 500, 333] });
    expect(prediction.detect.objects.map((object) => object.box)).toEqual([[190, 199, 371, 331]]);
  });

  it('leaves calls without detect, texts, and images over the size cap, to the service alone', async () => {
    const ai = new FakeWorkersAi(async () => []);
    const adapter = withWorkersAiDetection(service(), ai, { retries: 0, maxImageBytes: plant.byteLength - 1 });
    expect((await adapter.predict(plant, ['embed'])).embed.dim).toBeGreaterThan(0);
    expect(await adapter.embedText('red', { embedModel: env.TEXT_EMBED_MODEL })).toMatchObject({ model: env.TEXT_EMBED_MODEL, dim: 3 });
    const large = await adapter.predict(plant, ['embed', 'detect']);
    expect(large.detect.model).not.toBe(DETR_MODEL);
    expect(large.detect.objects.map((object) => object.type)).toContain('Vase and Pot');
    expect(ai.images).toEqual([]);
  });

  it('retries a failed call, then reports the detector unavailable', async () => {
    let calls = 0;
    const flaky = new FakeWorkersAi(async () => {
      if (++calls === 1) throw new Error('3040: Capacity temporarily exceeded');
      return [detr('vase', 0.8, [190, 199, 371, 331])];
    });
    const recovered = await withWorkersAiDetection(service(), flaky, { retries: 1 }).predict(plant, ['detect']);
    expect(recovered.detect.objects).toHaveLength(1);
    expect(calls).toBe(2);

    const down = new FakeWorkersAi(async () => {
      throw new Error('3040: Capacity temporarily exceeded');
    });
    await expect(withWorkersAiDetection(service(), down, { retries: 1 }).predict(plant, ['detect'])).rejects.toBeInstanceOf(InferenceUnavailableError);
    expect(down.images).toHaveLength(2);
  });

  it('treats an answer out of the documented format as unavailable, never as "no objects"', async () => {
    for (const garbage of [{ objects: [] }, [{ label: 'vase', score: 0.9 }], [detr('vase', Number.NaN, [0, 0, 1, 1])], 'oops', null]) {
      const ai = new FakeWorkersAi(async () => garbage);
      await expect(withWorkersAiDetection(service(), ai, { retries: 0 }).predict(plant, ['detect'])).rejects.toBeInstanceOf(InferenceUnavailableError);
    }
    expect(parseDetrOutput([])).toEqual([]);
    expect(parseDetrOutput([detr('vase', 0.5, [1, 2, 3, 4])])).toEqual([{ label: 'vase', score: 0.5, box: [1, 2, 3, 4] }]);
  });

  it('the fake refuses input outside the documented schema', async () => {
    const ai = new FakeWorkersAi(async () => []);
    await expect(ai.run(DETR_MODEL, { image: [] })).rejects.toThrow(/3010/);
    await expect(ai.run(DETR_MODEL, { image: [0, 256] })).rejects.toThrow(/3010/);
    await expect(ai.run('@cf/facebook/detr-resnet-101' as typeof DETR_MODEL, { image: [1] })).rejects.toThrow(/5007/);
  });
});

describe('the Worker with DETECTOR = "workers-ai"', () => {
  it('uploadsearch finds objects with DETR and searches the catalog with them', async () => {
    const app = await createApp('detr');
    await insertAndWait(app, [{ im_name: 'plant', im_url: fixtureUrl(`/images/${PLANT}`) }]);
    const ai = new FakeWorkersAi(serviceDetections(env.INFERENCE_URL, env.INFERENCE_SECRET));
    const form = new FormData();
    form.set('image', new Blob([await bytesOf(PLANT)]), 'upload.jpg');
    const request = new Request('https://search.test/uploadsearch', { method: 'POST', body: form, headers: basicAuth(app) });
    const context = createExecutionContext();
    const response = await worker.fetch(request, { ...env, DETECTOR: 'workers-ai', AI: ai as unknown as Ai }, context);
    await waitOnExecutionContext(context);
    const body = await response.json<UploadBody>();
    expect(response.status).toBe(200);
    expect(ai.images).toHaveLength(1);
    expect(body.product_types.map((object) => object.type)).toEqual(['Vase and Pot']);
    expect(body.result[0]).toMatchObject({ im_name: 'plant' });
  });

  it('is a configuration error without the AI binding, rather than silently using another detector', () => {
    expect(() => inference({ ...env, DETECTOR: 'workers-ai' })).toThrow(/no AI binding/);
    expect(inference({ ...env, DETECTOR: 'workers-ai', AI: new FakeWorkersAi(async () => []) as unknown as Ai })).toBeDefined();
  });
});
