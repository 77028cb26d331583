import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { isProductType } from './product-types.ts';

/**
 * The prompts an open-vocabulary detector looks for each of the API's types with when an application gives none
 * (`inference/config/default-prompts.json`, editable): type -> texts.
 */
export type DefaultPrompts = ReadonlyMap<string, readonly string[]>;

export const DEFAULT_PROMPTS_FILE = path.resolve(import.meta.dirname, '../../../config/default-prompts.json');

const promptsFile = z.record(z.string(), z.array(z.string().trim().min(1).max(200)).min(1).max(10));

/** Reads the default prompts; a type that is not one of the API's, or a malformed file, stops the service at start. */
export function loadDefaultPrompts(file = DEFAULT_PROMPTS_FILE): DefaultPrompts {
  let parsed: z.infer<typeof promptsFile>;
  try {
    parsed = promptsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (cause) {
    throw new Error(`default prompts ${file}: not a JSON object of product type -> 1-10 texts (${(cause as Error).message})`);
  }
  const unknown = Object.keys(parsed).filter((type) => !isProductType(type));
  if (unknown.length > 0) throw new Error(`default prompts ${file}: ${unknown.map((type) => `"${type}"`).join(', ')} not product types of the API`);
  return new Map(Object.entries(parsed));
}

/** A type's prompts: its own, else the default ones of a type of that name, else its name as "a <name>". */
export function promptsOf(type: string, prompts: readonly string[] | undefined, defaults: DefaultPrompts): readonly string[] {
  return prompts ?? defaults.get(type) ?? [`a ${type.toLowerCase()}`];
}
