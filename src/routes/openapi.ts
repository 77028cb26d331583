import { Hono } from 'hono';
import type { AppEnv } from '../env';
import { openApiDocument } from '../openapi/document';
import { renderReference } from '../openapi/reference';

export const openApiRoutes = new Hono<AppEnv>();

/** The document names the server it was asked from, so that a client generated from it calls the same place. */
openApiRoutes.get('/openapi.json', (c) =>
  c.json({ ...openApiDocument(), servers: [{ url: new URL(c.req.url).origin }] }),
);

let page: string | undefined;

openApiRoutes.get('/docs', (c) =>
  c.html((page ??= renderReference(openApiDocument())), 200, {
    // Nothing but the page's own inline style may load.
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  }),
);
