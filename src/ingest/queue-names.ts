/**
 * The queues the Worker consumes (wrangler.toml), told apart by name, as a batch names its queue: a dead-letter queue
 * is its queue's name with `-dlq`; the metadata-only updates' queue is named `image-update`, or that with a suffix
 * (`image-update-cn`); every other is the ingest queue (images and the admin jobs' steps). Without imports, so that
 * `npm run check:deploy` checks wrangler.toml's names by the same rule.
 */
export const UPDATE_QUEUE_NAME = 'image-update';

export const isDeadLetterQueue = (queue: string): boolean => queue.endsWith('-dlq');

export const isUpdateQueue = (queue: string): boolean =>
  !isDeadLetterQueue(queue) && (queue === UPDATE_QUEUE_NAME || queue.startsWith(`${UPDATE_QUEUE_NAME}-`));
