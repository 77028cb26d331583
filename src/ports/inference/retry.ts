import { InferenceUnavailableError } from './types';

/** Runs `attempt`, retrying an InferenceUnavailableError `retries` times after a doubling pause; other errors pass at once. */
export async function retryUnavailable<T>(retries: number, attempt: () => Promise<T>): Promise<T> {
  for (let tried = 0; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof InferenceUnavailableError) || tried >= retries) throw error;
      await scheduler.wait(250 * 2 ** tried);
    }
  }
}
