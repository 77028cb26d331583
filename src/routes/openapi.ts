import { route, type Route, type RouteDeclaration } from '../http/route';
import { openApiDocument, type JsonSchema } from '../openapi/document';
import { renderReference } from '../openapi/reference';

const reference = { tag: 'Reference', auth: 'none', failure: { statuses: [] } } satisfies Partial<RouteDeclaration>;

/**
 * The document of `documented` (every route, these two among them) and its reference page, each built once per
 * isolate. The document names the server it was asked from, so that a client generated from it calls the same place.
 */
export function referenceRoutes(documented: () => readonly Route[]): Route[] {
  let document: JsonSchema | undefined;
  let page: string | undefined;
  const built = () => (document ??= openApiDocument(documented()));
  return [
    route(
      {
        ...reference,
        method: 'get',
        path: '/openapi.json',
        operationId: 'openapi',
        summary: 'This document',
        success: { status: 200, description: 'OpenAPI 3.1.' },
      },
      (c) => c.json({ ...built(), servers: [{ url: new URL(c.req.url).origin }] }),
    ),
    route(
      {
        ...reference,
        method: 'get',
        path: '/docs',
        operationId: 'docs',
        summary: 'This document as a reference page',
        success: { status: 200, media: 'text/html', description: 'HTML.' },
      },
      (c) =>
        c.html((page ??= renderReference(built())), 200, {
          // Nothing but the page's own inline style may load.
          'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
        }),
    ),
  ];
}
