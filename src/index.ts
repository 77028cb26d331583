import { app } from './app';
import type { Env } from './env';
import { consumeIngestBatch, consumeUpdateBatch } from './ingest/consumer';
import { consumeDeadLetters } from './ingest/dead-letters';
import type { IngestMessage } from './ingest/message';
import { isDeadLetterQueue, isUpdateQueue } from './ingest/queue-names';
import { sweepStalledInserts } from './ingest/sweeper';

export { LocalVectorIndex } from './ports/vector-index/local';
export { UsageCounter } from './storage/usage-counter';

export default {
  fetch: app.fetch,
  queue: (batch, env) =>
    isDeadLetterQueue(batch.queue)
      ? consumeDeadLetters(batch, env)
      : isUpdateQueue(batch.queue)
        ? consumeUpdateBatch(batch, env)
        : consumeIngestBatch(batch, env),
  scheduled: (controller, env, ctx) => ctx.waitUntil(sweepStalledInserts(env, new Date(controller.scheduledTime))),
} satisfies ExportedHandler<Env, IngestMessage>;
