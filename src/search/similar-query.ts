import { z } from 'zod';

/** docs/api.md, GET /search: the query image of `/search`, by name; the route answers a missing one as an unknown one. */
export const SIMILAR_QUERY = {
  im_name: z.string().min(1).meta({ description: 'An image already in the collection.' }),
};
