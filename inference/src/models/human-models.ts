import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A model file that @vladmandic/human ships in its models/ folder. The package exports no path to them: its entry
 * point (dist/) is resolved and models/ is beside it.
 */
export const humanModelFile = (file: string): string =>
  path.resolve(path.dirname(fileURLToPath(import.meta.resolve('@vladmandic/human'))), '../models', file);
