import type { Env } from '../../env';
import { httpInference } from './http';
import type { Inference } from './types';
import { withWorkersAiDetection } from './workers-ai-detection';

/** Retries of a failed call within one request; the queue's own retries come on top for inserts. */
const PREDICT_RETRIES = 1;

/** The inference service, with detection moved to Workers AI when DETECTOR says so. */
export function inference(env: Env): Inference {
  const timeoutMs = Number(env.INFERENCE_TIMEOUT_MS);
  const service = httpInference(env.INFERENCE_URL, { timeoutMs, secret: env.INFERENCE_SECRET, retries: PREDICT_RETRIES });
  if (env.DETECTOR !== 'workers-ai') return service;
  if (!env.AI) throw new Error('DETECTOR is "workers-ai" but no AI binding is configured');
  return withWorkersAiDetection(service, env.AI, { retries: PREDICT_RETRIES });
}
