import type { Route } from '../http/route';
import { adminRoutes } from './admin';
import { catalogRoutes } from './catalog';
import { colorSearchRoutes } from './color-search';
import { consoleRoutes } from './console';
import { dataRoutes } from './data';
import { imageSearchRoutes } from './image-search';
import { referenceRoutes } from './openapi';
import { searchRoutes } from './search';
import { textSearchRoutes } from './text-search';

/** Every route of the Worker, in the order the OpenAPI document lists them. */
export const ROUTES: readonly Route[] = [
  ...searchRoutes,
  ...imageSearchRoutes,
  ...colorSearchRoutes,
  ...textSearchRoutes,
  ...dataRoutes,
  ...catalogRoutes,
  ...consoleRoutes,
  ...adminRoutes,
  ...referenceRoutes(() => ROUTES),
];
