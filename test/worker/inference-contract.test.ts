/**
 * The wire contract with the inference service (contract/wire.ts), as the Worker uses it: the form it
 * builds is the one the real service reads, and an answer is trusted only when every asked task's result is whole.
 */
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { predictForm, predictionSchema } from '@edge-image-search/contract/wire';
import { fixtureUrl } from './helpers';

const PLANT = 'opencv-doc_plant.jpg'; // 500x333, a pot the detector finds

async function post(form: FormData): Promise<unknown> {
  const headers: Record<string, string> = env.INFERENCE_SECRET ? { authorization: `Bearer ${env.INFERENCE_SECRET}` } : {};
  const response = await fetch(new URL('/predict', env.INFERENCE_URL), { method: 'POST', body: form, headers });
  expect(response.status).toBe(200);
  return response.json();
}

describe('the /predict contract', () => {
  let plant: Uint8Array;
  let answer: Record<string, unknown>;
  beforeAll(async () => {
    plant = new Uint8Array(await (await fetch(fixtureUrl(`/images/${PLANT}`))).arrayBuffer());
    answer = (await post(predictForm(plant, ['embed', 'detect', 'colors'], { box: [0, 0, 500, 333] }))) as Record<string, unknown>;
  });

  it('the real service answers the form predictForm builds, in the shape predictionSchema reads', () => {
    const prediction = predictionSchema(['embed', 'detect', 'colors']).parse(answer);
    expect(prediction.image).toEqual({ width: 500, height: 333, format: 'jpeg' });
    expect(prediction.box).toEqual([0, 0, 500, 333]);
    expect(prediction.embed.vector).toHaveLength(prediction.embed.dim);
    expect(prediction.detect.objects.length).toBeGreaterThan(0);
    expect(prediction.detect.objects[0]!.colors?.length).toBeGreaterThan(0);
    expect(prediction.colors.palette.length).toBeGreaterThan(0);
  });

  it('an answer missing an asked task, or with a malformed result, is refused', () => {
    const { detect, ...withoutDetect } = answer;
    expect(detect).toBeDefined();
    expect(predictionSchema(['embed', 'detect']).safeParse(withoutDetect).success).toBe(false);
    expect(predictionSchema(['embed']).safeParse(withoutDetect).success).toBe(true);
    const embed = answer.embed as { vector: unknown[] };
    const badVector = { ...answer, embed: { ...embed, vector: embed.vector.map(String) } };
    expect(predictionSchema(['embed']).safeParse(badVector).success).toBe(false);
    const badColour = { ...answer, colors: { model: 'x', palette: [{ hex: 'red', ratio: 1 }] } };
    expect(predictionSchema(['colors']).safeParse(badColour).success).toBe(false);
    expect(predictionSchema(['embed']).safeParse({ embed: answer.embed }).success).toBe(false);
  });
});
