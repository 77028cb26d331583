/**
 * The one shape of the admin jobs (a reindex, a tuning): progress lives in D1, and each step, a queue message, runs
 * bounded work and sends the next. Each message carries its step's number: a superseded chain of messages (a
 * redelivery, a resume by the sweeper) stops at its next step, because the job's row has moved on.
 */
import type { Env } from '../env';
import { getApp, type AppRecord } from '../storage/apps';
import { catalogDatabase } from '../storage/databases';
import { sendJobMessage, type JobMessage } from './message';
import { DEFER_SECONDS, tryAgainLater } from './retry-policy';

/** What comes after a step: the next one now, after a wait (DEFER_SECONDS unless `delaySeconds` says), or nothing. */
export type JobStep = { next: 'now' | 'wait'; step: number; delaySeconds?: number } | { next: 'ended' };

export const ENDED: JobStep = { next: 'ended' };
/** The next step, numbered `step`; nothing when the step's row had moved on (null). */
export const nextStep = (next: 'now' | 'wait', step: number | null, delaySeconds?: number): JobStep =>
  step === null ? ENDED : { next, step, ...(delaySeconds !== undefined && { delaySeconds }) };

/** A job's kind as its message names it, what a step does, and where a step's error is kept for the job's status. */
export type JobKind<M extends JobMessage> = {
  name: string;
  appOf: (body: M) => string;
  message: (appId: string, step: number) => M;
  run: (env: Env, app: AppRecord, step: number) => Promise<JobStep>;
  /** Keeps a step's error in the job's row, in the application's catalog database. */
  noteError: (db: D1Database, appId: string, error: string) => Promise<void>;
};

/** A job step's message: runs the step and sends the next; busy and transient failures as retry-policy.ts says. */
export async function handleJobMessage<M extends JobMessage>(env: Env, message: Message<M>, kind: JobKind<M>): Promise<void> {
  const appId = kind.appOf(message.body);
  const { step } = message.body;
  let app: AppRecord | null = null;
  try {
    // Read each step: the job's row is in the application's catalog database.
    app = await getApp(env.DB, appId);
    if (!app) {
      message.ack();
      return;
    }
    const after = await kind.run(env, app, step);
    if (after.next !== 'ended') {
      await sendJobMessage(env.INSERT_QUEUE, kind.message(appId, after.step), after.next === 'wait' ? { delaySeconds: after.delaySeconds ?? DEFER_SECONDS } : {});
    }
    message.ack();
  } catch (error) {
    // Past max_retries the dead-letter consumer drops it; the sweeper resumes the stalled job (sweeper.ts).
    await tryAgainLater(env.INSERT_QUEUE, message, error, async () => {
      console.error(JSON.stringify({ event: `${kind.name}_step_error`, appId, step, attempt: message.attempts, error: String(error) }));
      if (app) await kind.noteError(catalogDatabase(env, app), appId, String(error)).catch(() => undefined);
    });
  }
}
