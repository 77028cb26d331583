import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { ApiError } from '../http/envelope';
import { GENERAL } from '../http/messages';
import { digestsEqual, hashKey } from './keys';

/** The admin API answers only `Authorization: Bearer <ADMIN_TOKEN>`; digests are compared in constant time. */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const match = /^Bearer\s+(.+)$/i.exec(c.req.header('authorization') ?? '');
  const configured = c.env.ADMIN_TOKEN;
  if (!match?.[1] || !configured || !digestsEqual(await hashKey(match[1].trim()), await hashKey(configured))) {
    throw new ApiError(401, GENERAL.unauthorized);
  }
  await next();
});
