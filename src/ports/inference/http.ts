import { InferenceUnavailableError, RegionOutsideImageError, UndecodableImageError, type Inference, type Prediction, type PredictOptions, type Task } from './types';
import { retryUnavailable } from './retry';

/** The bundled inference service (`inference/`), reached over HTTP with its shared secret. */
export function httpInference(baseUrl: string, config: { timeoutMs: number; secret: string | undefined; retries: number }): Inference {
  const endpoint = new URL('/predict', baseUrl).toString();
  const headers: Record<string, string> = config.secret ? { authorization: `Bearer ${config.secret}` } : {};

  async function once(image: Uint8Array, tasks: Task[], options: PredictOptions): Promise<Prediction> {
    const form = new FormData();
    form.set('image', new Blob([image]), 'image');
    form.set('tasks', tasks.join(','));
    if (options.box) form.set('box', options.box.join(','));
    if (options.detections) form.set('detections', JSON.stringify(options.detections));
    let response: Response;
    try {
      response = await fetch(endpoint, { method: 'POST', body: form, headers, signal: AbortSignal.timeout(config.timeoutMs) });
    } catch (error) {
      throw new InferenceUnavailableError(`inference request failed: ${String(error)}`);
    }
    if (response.status === 422 || response.status === 400) {
      const { error } = await response.json<{ error?: { code?: string; message?: string } }>().catch(() => ({ error: undefined }));
      if (response.status === 422) throw new UndecodableImageError(error?.message ?? 'undecodable image');
      if (error?.code === 'bad_box') throw new RegionOutsideImageError(error.message ?? 'bad box');
    }
    if (!response.ok) throw new InferenceUnavailableError(`inference answered HTTP ${response.status}`);
    const prediction = await response.json<Prediction>().catch(() => null);
    const incomplete =
      !prediction?.image ||
      (tasks.includes('embed') && !Array.isArray(prediction.embed?.vector)) ||
      (tasks.includes('detect') && !Array.isArray(prediction.detect?.objects)) ||
      (tasks.includes('colors') && !Array.isArray(prediction.colors?.palette));
    if (incomplete) throw new InferenceUnavailableError('inference answered an unexpected body');
    return prediction;
  }

  return {
    /** Retries a timeout, a lost connection or a 5xx after a short pause; a bad image is answered at once. */
    predict: (image: Uint8Array, tasks: Task[], options: PredictOptions = {}): Promise<Prediction> =>
      retryUnavailable(config.retries, () => once(image, tasks, options)),
  };
}
