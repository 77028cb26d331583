import { InferenceUnavailableError, UndecodableImageError, type Inference, type Prediction, type Task } from './types';

/** The bundled inference service (`inference/`), reached over HTTP. */
export function httpInference(baseUrl: string, options: { timeoutMs: number }): Inference {
  const endpoint = new URL('/predict', baseUrl).toString();
  return {
    async predict(image: Uint8Array, tasks: Task[]): Promise<Prediction> {
      const form = new FormData();
      form.set('image', new Blob([image]), 'image');
      form.set('tasks', tasks.join(','));
      let response: Response;
      try {
        response = await fetch(endpoint, { method: 'POST', body: form, signal: AbortSignal.timeout(options.timeoutMs) });
      } catch (error) {
        throw new InferenceUnavailableError(`inference request failed: ${String(error)}`);
      }
      if (response.status === 422) {
        const body = await response.json<{ error?: { message?: string } }>().catch(() => ({ error: undefined }));
        throw new UndecodableImageError(body.error?.message ?? 'undecodable image');
      }
      if (!response.ok) throw new InferenceUnavailableError(`inference answered HTTP ${response.status}`);
      const prediction = await response.json<Prediction>().catch(() => null);
      if (!prediction?.image || (tasks.includes('embed') && !Array.isArray(prediction.embed?.vector))) {
        throw new InferenceUnavailableError('inference answered an unexpected body');
      }
      return prediction;
    },
  };
}
