import type { Env } from '../../env';
import { httpInference } from './http';
import type { Inference } from './types';

const PREDICT_TIMEOUT_MS = 30_000;
/** Retries of a failed call within one request; the queue's own retries come on top for inserts. */
const PREDICT_RETRIES = 1;

export const inference = (env: Env): Inference =>
  httpInference(env.INFERENCE_URL, { timeoutMs: PREDICT_TIMEOUT_MS, secret: env.INFERENCE_SECRET, retries: PREDICT_RETRIES });
