import { app } from './app';
import type { Env } from './env';
import { consumeInsertBatch } from './ingest/consumer';
import type { InsertMessage } from './ingest/message';

export { LocalVectorIndex } from './ports/vector-index/local';

export default {
  fetch: app.fetch,
  queue: consumeInsertBatch,
} satisfies ExportedHandler<Env, InsertMessage>;
