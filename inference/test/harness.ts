/**
 * Shared by the server tests: starts the real service (node src/server.ts on
 * a free port), posts to /predict, reads the shared test images.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { RawPixels } from '@edge-image-search/devtools/image-formats';
import { PRIORITY_HEADER, type ErrorBody, type Prediction } from '@edge-image-search/contract/wire';

const SERVER = path.resolve(import.meta.dirname, '../src/server.ts');
import { IMAGES_DIR } from '@edge-image-search/devtools/fixture-images';

export { IMAGES_DIR };

export type { Box, DetectedObject, ErrorBody, PaletteColor } from '@edge-image-search/contract/wire';
/** An answer as the tests read it: every task's result, or the error. */
export type PredictBody = ErrorBody & Prediction;

/** Optional fields of the /predict form, sent as given. */
export type FormFields = { box?: string; detections?: string; embed_model?: string };

export type RunningServer = {
  readonly baseUrl: string;
  /** The service's process, e.g. to read its memory from /proc. */
  readonly pid: number;
  /** What it printed on stdout so far. */
  output(): string;
  /**
   * Posts an image with tasks (default "embed") and the other form fields given, as given;
   * `priority` is sent as the priority header, as given.
   */
  predict(bytes: Uint8Array, tasks?: string, fields?: FormFields, priority?: string): Promise<{ status: number; body: PredictBody }>;
  stop(): void;
};

/**
 * Spawns the service on a free port and resolves with its URL as soon as it
 * listens (models may still load), and what it has written to stderr so far.
 * `env` adds to the environment, e.g. DETECTOR_LABELS.
 */
export async function launchServer(
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; baseUrl: string; errorOutput: () => string; output: () => string }> {
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, ...env, INFERENCE_PORT: '0', INFERENCE_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Shown as it comes, and kept for tests of what the service logs.
  let errorOutput = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    errorOutput += chunk;
    process.stderr.write(chunk);
  });
  // Kept for tests of what the service prints (the lines of a model download).
  let output = '';
  child.stdout!.on('data', (chunk: Buffer | string) => (output += chunk));
  return { child, baseUrl: await listeningUrl(child), errorOutput: () => errorOutput, output: () => output };
}

/** Runs the service with a setting that must stop it at start: its exit code and everything it printed. */
export async function runUntilExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [SERVER], { env: { ...process.env, ...env, INFERENCE_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

export async function waitUntilHealthy(baseUrl: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await fetch(`${baseUrl}/ready`)).status !== 200) {
    if (Date.now() > deadline) throw new Error('the service did not become ready within 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts the service and resolves once /ready says so. */
export async function startServer(env: Record<string, string> = {}): Promise<RunningServer> {
  const { child, baseUrl, output } = await launchServer(env);
  await waitUntilHealthy(baseUrl);
  return {
    baseUrl,
    pid: child.pid!,
    output,
    async predict(bytes, tasks = 'embed', fields = {}, priority) {
      const form = new FormData();
      form.set('tasks', tasks);
      form.set('image', new Blob([bytes]), 'upload');
      for (const [name, value] of Object.entries(fields)) form.set(name, value);
      const headers: Record<string, string> = priority === undefined ? {} : { [PRIORITY_HEADER]: priority };
      const response = await fetch(`${baseUrl}/predict`, { method: 'POST', body: form, headers });
      return { status: response.status, body: (await response.json()) as PredictBody };
    },
    stop: () => child.kill(),
  };
}

function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening`)));
  });
}

/** A shared test image as sharp's raw pixels. */
export async function loadPixels(file: string): Promise<RawPixels> {
  const { data, info } = await sharp(await readFile(path.join(IMAGES_DIR, file))).raw().toBuffer({ resolveWithObject: true });
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
