import { app } from './app';
import type { Env } from './env';
import { consumeIngestBatch } from './ingest/consumer';
import { consumeDeadLetters, isDeadLetterQueue } from './ingest/dead-letters';
import type { IngestMessage } from './ingest/message';
import { sweepStalledInserts } from './ingest/sweeper';

export { LocalVectorIndex } from './ports/vector-index/local';
export { UsageCounter } from './storage/usage-counter';

export default {
  fetch: app.fetch,
  queue: (batch, env) => (isDeadLetterQueue(batch.queue) ? consumeDeadLetters(batch, env) : consumeIngestBatch(batch, env)),
  scheduled: (controller, env, ctx) => ctx.waitUntil(sweepStalledInserts(env, new Date(controller.scheduledTime))),
} satisfies ExportedHandler<Env, IngestMessage>;
