import { z } from 'zod';
import { detectorInfo, errorBody, predictForm, predictionSchema, PRIORITY_HEADER, textForm, textPredictionSchema } from '@edge-image-search/contract/wire';
import {
  InferenceBusyError,
  InferenceUnavailableError,
  ModelReadsNoTextError,
  RegionOutsideImageError,
  UndecodableImageError,
  UnknownEmbedModelError,
  type Inference,
  type Prediction,
  type PredictOptions,
  type Priority,
  type Task,
} from './types';
import { retryUnavailable } from './retry';

/** The bundled inference service (`inference/`), reached over HTTP with its shared secret. */
export function httpInference(baseUrl: string, config: { timeoutMs: number; secret: string | undefined; retries: number }): Inference {
  const endpoint = new URL('/predict', baseUrl).toString();
  const authorization: Record<string, string> = config.secret ? { authorization: `Bearer ${config.secret}` } : {};

  /** Posts one form and reads the answer by `schema`; the service's refusals become the port's errors. */
  async function once<T>(form: FormData, priority: Priority | undefined, schema: z.ZodType<T>): Promise<T> {
    const headers = priority ? { ...authorization, [PRIORITY_HEADER]: priority } : authorization;
    let response: Response;
    try {
      response = await fetch(endpoint, { method: 'POST', body: form, headers, signal: AbortSignal.timeout(config.timeoutMs) });
    } catch (error) {
      throw new InferenceUnavailableError(`inference request failed: ${String(error)}`);
    }
    if (response.status === 422 || response.status === 400) {
      const failure = errorBody.safeParse(await response.json().catch(() => null));
      const error = failure.success ? failure.data.error : undefined;
      if (response.status === 422) throw new UndecodableImageError(error?.message ?? 'undecodable image');
      if (error?.code === 'bad_box') throw new RegionOutsideImageError(error.message);
      if (error?.code === 'unknown_embed_model') throw new UnknownEmbedModelError(error.message);
      if (error?.code === 'model_reads_no_text') throw new ModelReadsNoTextError(error.message);
    }
    if (response.status === 503 && response.headers.has('retry-after')) {
      await response.body?.cancel();
      throw new InferenceBusyError('inference answered busy', Number(response.headers.get('retry-after')) || 1);
    }
    if (!response.ok) throw new InferenceUnavailableError(`inference answered HTTP ${response.status}`);
    const answer = schema.safeParse(await response.json().catch(() => null));
    if (!answer.success) throw new InferenceUnavailableError(`inference answered an unexpected body: ${z.prettifyError(answer.error)}`);
    return answer.data;
  }

  return {
    /**
     * An interactive call retries a timeout, a lost connection or a 5xx after a short pause; a bulk one is retried
     * by its queue, with backoff. A bad image is answered at once.
     */
    predict: <T extends Task>(image: Uint8Array, tasks: readonly T[], options: PredictOptions = {}): Promise<Prediction<T>> =>
      retryUnavailable(options.priority === 'bulk' ? 0 : config.retries, () => once(predictForm(image, tasks, options), options.priority, predictionSchema(tasks))),
    /** A search's text: interactive, retried as an interactive prediction is. */
    embedText: async (text, { embedModel }) =>
      (await retryUnavailable(config.retries, () => once(textForm(text, { embedModel }), undefined, textPredictionSchema))).embed,
    /** The detector of `/health`: absent while the service loads its models, which is its being unavailable. */
    detector: () =>
      retryUnavailable(config.retries, async () => {
        let answer: unknown;
        try {
          const response = await fetch(new URL('/health', baseUrl), { signal: AbortSignal.timeout(config.timeoutMs) });
          answer = await response.json();
        } catch (error) {
          throw new InferenceUnavailableError(`inference health request failed: ${String(error)}`);
        }
        const health = z.object({ detector: detectorInfo }).safeParse(answer);
        if (!health.success) throw new InferenceUnavailableError('inference has no detector loaded yet');
        return health.data.detector;
      }),
  };
}
