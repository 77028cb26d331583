import { COLOR_ATTRIBUTE, COLOR_NAMES, isColorName } from '@edge-image-search/contract/attributes';
import type { DetectorInfo, VocabularyType } from '@edge-image-search/contract/wire';

/**
 * What is wrong with an application's own types for the loaded detector, or null (docs/decisions.md, "Product types
 * and attributes"): an open-vocabulary detector finds any type its prompts name; any other reports only its own types,
 * and prompts would change nothing, so they are refused. `color` takes the service's colour names only.
 */
export function productTypesProblem(types: readonly VocabularyType[], detector: DetectorInfo): string | null {
  for (const [index, entry] of types.entries()) {
    const where = `types[${index}] (${entry.type})`;
    if (!detector.open_vocabulary) {
      if (entry.prompts) return `${where}: prompts need an open-vocabulary detector; ${detector.model} reports only its own types: ${detector.types.join(', ')}`;
      if (!detector.types.includes(entry.type)) return `${where}: not a type ${detector.model} can report (${detector.types.join(', ')})`;
    }
    const unknown = (entry.attributes_list?.[COLOR_ATTRIBUTE] ?? []).filter((name) => !isColorName(name));
    if (unknown.length > 0) return `${where}: ${unknown.map((name) => `"${name}"`).join(', ')} not colour names of the service (${COLOR_NAMES.join(', ')})`;
  }
  return null;
}
