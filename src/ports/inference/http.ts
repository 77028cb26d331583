import { z } from 'zod';
import { errorBody, predictForm, predictionSchema, PRIORITY_HEADER } from '../../../inference/src/contract';
import {
  InferenceBusyError,
  InferenceUnavailableError,
  RegionOutsideImageError,
  UndecodableImageError,
  UnknownEmbedModelError,
  type Inference,
  type Prediction,
  type PredictOptions,
  type Task,
} from './types';
import { retryUnavailable } from './retry';

/** The bundled inference service (`inference/`), reached over HTTP with its shared secret. */
export function httpInference(baseUrl: string, config: { timeoutMs: number; secret: string | undefined; retries: number }): Inference {
  const endpoint = new URL('/predict', baseUrl).toString();
  const authorization: Record<string, string> = config.secret ? { authorization: `Bearer ${config.secret}` } : {};

  async function once<T extends Task>(image: Uint8Array, tasks: readonly T[], options: PredictOptions): Promise<Prediction<T>> {
    const headers = options.priority ? { ...authorization, [PRIORITY_HEADER]: options.priority } : authorization;
    let response: Response;
    try {
      response = await fetch(endpoint, { method: 'POST', body: predictForm(image, tasks, options), headers, signal: AbortSignal.timeout(config.timeoutMs) });
    } catch (error) {
      throw new InferenceUnavailableError(`inference request failed: ${String(error)}`);
    }
    if (response.status === 422 || response.status === 400) {
      const failure = errorBody.safeParse(await response.json().catch(() => null));
      const error = failure.success ? failure.data.error : undefined;
      if (response.status === 422) throw new UndecodableImageError(error?.message ?? 'undecodable image');
      if (error?.code === 'bad_box') throw new RegionOutsideImageError(error.message);
      if (error?.code === 'unknown_embed_model') throw new UnknownEmbedModelError(error.message);
    }
    if (response.status === 503 && response.headers.has('retry-after')) {
      await response.body?.cancel();
      throw new InferenceBusyError('inference answered busy', Number(response.headers.get('retry-after')) || 1);
    }
    if (!response.ok) throw new InferenceUnavailableError(`inference answered HTTP ${response.status}`);
    const prediction = predictionSchema(tasks).safeParse(await response.json().catch(() => null));
    if (!prediction.success) throw new InferenceUnavailableError(`inference answered an unexpected body: ${z.prettifyError(prediction.error)}`);
    return prediction.data;
  }

  return {
    /**
     * An interactive call retries a timeout, a lost connection or a 5xx after a short pause; a bulk one is retried
     * by its queue, with backoff. A bad image is answered at once.
     */
    predict: <T extends Task>(image: Uint8Array, tasks: readonly T[], options: PredictOptions = {}): Promise<Prediction<T>> =>
      retryUnavailable(options.priority === 'bulk' ? 0 : config.retries, () => once(image, tasks, options)),
  };
}
