/**
 * Insert items a consumer handles at once (consumer.ts). A batch (wrangler.toml's max_batch_size) is larger than
 * this: its items go through as a pool, each finished one making room for the next, so that the inference service's
 * bulk line stays fed across the end of one item and the start of another; only the batch's last few leave it short
 * (docs/decisions.md, "Inserts at the service's speed"). It also bounds the images a consumer holds in memory at once.
 * Its own module, imported by `npm run bench` too, which posts its raw predictions as many at a time.
 */
export const INSERT_ITEMS_IN_FLIGHT = 10;
