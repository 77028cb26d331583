/**
 * The one shape of the admin jobs (a reindex, a tuning, a move): progress lives in D1, and each step, a queue
 * message, runs bounded work and sends the next. Each message carries its step's number: a superseded chain of
 * messages (a redelivery, a resume by the sweeper) stops at its next step, because the job's row has moved on.
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

/** Sweeps a job may stall through before the sweeper gives it up, where giving up is possible. */
export const MAX_RESUMES = 3;

/** A job under way that made no progress for a while: its message was lost or dead-lettered (sweeper.ts). */
export type StalledJob = { appId: string; resumes: number; error: string | null };

/**
 * A job's kind as its message names it, what a step does, where its rows are (each application's catalog database,
 * or the control database), where a step's error is kept for the job's status, and how the sweeper finds and goes
 * on with one that stalled.
 */
export type JobKind<M extends JobMessage, S extends StalledJob = StalledJob> = {
  name: string;
  appOf: (body: M) => string;
  message: (appId: string, step: number) => M;
  run: (env: Env, app: AppRecord, step: number) => Promise<JobStep>;
  rowsIn: 'catalog' | 'control';
  noteError: (db: D1Database, appId: string, error: string) => Promise<void>;
  /** Its jobs in `db` under way and unchanged since `before`. */
  stalled: (db: D1Database, before: string) => Promise<S[]>;
  /** Goes on with a stalled job, or gives it up: the step to send, or null for none. */
  recover: (env: Env, db: D1Database, job: S) => Promise<number | null>;
};

/** Why a job is given up after stalling: its resumes, and the last step's error. */
export const stalledReason = (job: StalledJob): string => `No progress over ${MAX_RESUMES} resumes${job.error ? `; the last error: ${job.error}` : ''}.`;

/** A job step's message: runs the step and sends the next; busy and transient failures as retry-policy.ts says. */
export async function handleJobMessage<M extends JobMessage, S extends StalledJob>(env: Env, message: Message<M>, kind: JobKind<M, S>): Promise<void> {
  const appId = kind.appOf(message.body);
  const { step } = message.body;
  let app: AppRecord | null = null;
  try {
    // Read each step: a catalog job's row is in the application's catalog database.
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
    await tryAgainLater(message, error, (body, options) => sendJobMessage(env.INSERT_QUEUE, body, options), async () => {
      console.error(JSON.stringify({ event: `${kind.name}_step_error`, appId, step, attempt: message.attempts, error: String(error) }));
      if (app) await kind.noteError(kind.rowsIn === 'catalog' ? catalogDatabase(env, app) : env.DB, appId, String(error)).catch(() => undefined);
    });
  }
}
