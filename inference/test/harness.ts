/**
 * Shared by the server tests: starts the real service on a free port (devtools/inference-service.ts, the one launcher),
 * posts to /predict, reads the shared test images.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { PRIORITY_HEADER, type ErrorBody, type Prediction } from '@edge-image-search/contract/wire';
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';
import type { RawPixels } from '@edge-image-search/devtools/image-formats';
import { launchInference, waitUntilReady, type InferenceProcess } from '@edge-image-search/devtools/inference-service';

export { IMAGES_DIR };
export { runUntilExit, waitUntilReady } from '@edge-image-search/devtools/inference-service';

export type { Box, DetectedObject, ErrorBody, PaletteColor } from '@edge-image-search/contract/wire';
/** An answer as the tests read it: every task's result, or the error. */
export type PredictBody = ErrorBody & Prediction;

/** Optional fields of the /predict form, sent as given. */
export type FormFields = { box?: string; detections?: string; embed_model?: string; vocabulary?: string };

export type RunningServer = InferenceProcess & {
  /** The service's process, e.g. to read its memory from /proc. */
  readonly pid: number;
  /**
   * Posts an image with tasks (default "embed") and the other form fields given, as given;
   * `priority` is sent as the priority header, as given.
   */
  predict(bytes: Uint8Array, tasks?: string, fields?: FormFields, priority?: string): Promise<{ status: number; body: PredictBody }>;
  /** Posts a /predict form as it is, e.g. one without an image. */
  post(form: FormData, headers?: Record<string, string>): Promise<{ status: number; body: PredictBody }>;
  stop(): void;
};

/**
 * Spawns the service on a free port and resolves as soon as it listens (models may still load: `waitUntilReady`).
 * `env` adds to the environment, e.g. DETECTOR_LABELS.
 */
export async function launchServer(env: Record<string, string> = {}): Promise<RunningServer> {
  const service = await launchInference(env);
  const post: RunningServer['post'] = async (form, headers = {}) => {
    const response = await fetch(`${service.baseUrl}/predict`, { method: 'POST', body: form, headers });
    return { status: response.status, body: (await response.json()) as PredictBody };
  };
  return {
    ...service,
    pid: service.child.pid!,
    post,
    predict(bytes, tasks = 'embed', fields = {}, priority) {
      const form = new FormData();
      form.set('tasks', tasks);
      form.set('image', new Blob([bytes]), 'upload');
      for (const [name, value] of Object.entries(fields)) form.set(name, value);
      return post(form, priority === undefined ? {} : { [PRIORITY_HEADER]: priority });
    },
    stop: () => service.child.kill(),
  };
}

/** Starts the service and resolves once /ready says so. */
export async function startServer(env: Record<string, string> = {}): Promise<RunningServer> {
  const server = await launchServer(env);
  await waitUntilReady(server);
  return server;
}

/** A shared test image's bytes. */
export function imageBytes(file: string): Promise<Buffer> {
  return readFile(path.join(IMAGES_DIR, file));
}

/** A shared test image as sharp's raw pixels. */
export async function loadPixels(file: string): Promise<RawPixels> {
  const { data, info } = await sharp(await imageBytes(file)).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels as 3 | 4 };
}

/**
 * A cut-out on a white background made transparent: near-white pixels get
 * alpha 0 with black underneath, light ones alpha 128. An image whose alpha is
 * ignored shows a black background, which the embedding notices.
 */
export async function transparentCutOut(file: string): Promise<{ image: RawPixels; ignoringAlpha: RawPixels }> {
  const rgb = await loadPixels(file);
  const { width, height } = rgb;
  const rgba = new Uint8Array(width * height * 4);
  const black = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const [r, g, b] = [rgb.data[i * 3]!, rgb.data[i * 3 + 1]!, rgb.data[i * 3 + 2]!];
    const lightest = Math.min(r, g, b);
    const alpha = lightest > 235 ? 0 : lightest > 200 ? 128 : 255;
    const keep = alpha > 0;
    rgba.set([keep ? r : 0, keep ? g : 0, keep ? b : 0, alpha], i * 4);
    black.set([keep ? r : 0, keep ? g : 0, keep ? b : 0], i * 3);
  }
  return { image: { data: rgba, width, height, channels: 4 }, ignoringAlpha: { data: black, width, height, channels: 3 } };
}

export function png(image: RawPixels): Promise<Buffer> {
  const { data, width, height, channels } = image;
  return sharp(data, { raw: { width, height, channels } }).png().toBuffer();
}

export function norm(vector: readonly number[]): number {
  return Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(normA * normB);
}
