import { z } from 'zod';
import { integer } from '../http/param-schema';

/** trans_ids are integers below 2^53 (docs/decisions.md). */
export const TRANSACTION = {
  trans_id: z.int().min(0).meta({ description: 'The `trans_id` an `/insert` answered.' }),
};

/** Spec 4.2; the default and ceiling of `error_limit` are ours (spec 8 leaves them open). */
export const INSERT_STATUS = {
  error_page: integer({ min: 1, max: Number.MAX_SAFE_INTEGER, default: 1 }, 'Page of `error_list` to return, from 1.'),
  error_limit: integer({ min: 1, max: 100, default: 10 }, 'Error entries per page.'),
};

/** Names per `/remove` call, as for `/insert`. */
export const MAX_REMOVE_NAMES = 100;

/** Spec 4.3: one image to remove, sent as `im_name[i]`. */
export const REMOVED_IMAGE = z.object({ im_name: z.string().meta({ description: 'An image to remove.' }) });
