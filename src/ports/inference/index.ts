import type { Env } from '../../env';
import { httpInference } from './http';
import type { Inference } from './types';

const PREDICT_TIMEOUT_MS = 30_000;

export const inference = (env: Env): Inference => httpInference(env.INFERENCE_URL, { timeoutMs: PREDICT_TIMEOUT_MS });
