import { embedModelEntries, type EmbedModelEntry } from '../../inference/src/models/registry.ts';
import { servedEmbedders } from './served-models.ts';

/**
 * Which embedding models `npm run eval` and `npm run bench` measure (`--embed-model`): those the inference service
 * loaded (`INFERENCE_EMBED_MODELS`, default the two bundled ones), as its `/health` lists them, the default first.
 */

/** A model the running inference service loaded. */
export type LoadedModel = {
  /** Its full id: what `/health` lists, an application's `embed_model`. */
  id: string;
  /** The INFERENCE_EMBED_MODELS entry it was loaded from (`mobilenet-v2`, `hf:Xenova/clip-vit-base-patch32`, a folder). */
  entry: EmbedModelEntry;
  /** The entry as written. */
  entryName: string;
  /** Its vectors' length, as /health reports it. */
  dimensions: number;
  /** Whether it embeds text too (a CLIP or SigLIP with its text tower). */
  text: boolean;
  /** The tables' short name: its dimensions, with its position among the loaded models where two share them. */
  label: string;
  /** The service's default, INFERENCE_EMBED_MODELS's first. */
  isDefault: boolean;
};

const entryNameOf = (entry: EmbedModelEntry): string => (entry.kind === 'built-in' ? entry.name : entry.entry);

/**
 * The models the service at `inferenceUrl` loaded, in INFERENCE_EMBED_MODELS's order, each with the entry it came
 * from (this process's environment is the service's: devtools/inference-service.ts passes it on), its dimensions
 * and whether it reads text, as its /health reports them (servedEmbedders).
 */
export async function loadedEmbedModels(inferenceUrl: string): Promise<LoadedModel[]> {
  const served = await servedEmbedders(inferenceUrl);
  const entries = embedModelEntries();
  if (served.length !== entries.length) {
    throw new Error(`the inference service lists ${served.length} embedding models (${served.map(({ id }) => id).join(', ')}) for ${entries.length} INFERENCE_EMBED_MODELS entries`);
  }
  return served.map(({ id, dim, text }, index) => {
    const shared = served.filter((other) => other.dim === dim).length > 1;
    return {
      id,
      entry: entries[index]!,
      entryName: entryNameOf(entries[index]!),
      dimensions: dim,
      text,
      label: shared ? `${dim}d#${index + 1}` : `${dim}d`,
      isDefault: index === 0,
    };
  });
}

/**
 * The loaded models `asked` names, in the service's order, each by its id, its INFERENCE_EMBED_MODELS entry or its
 * label; a name that matches none is refused, listing the loaded models.
 */
export function chooseEmbedModels(loaded: readonly LoadedModel[], asked: readonly string[]): LoadedModel[] {
  const matches = (model: LoadedModel, name: string) => name === model.id || name === model.entryName || name === model.label;
  const unknown = asked.filter((name) => !loaded.some((model) => matches(model, name)));
  if (unknown.length > 0) {
    const list = loaded.map((model) => `  ${model.label}  ${model.id}  (INFERENCE_EMBED_MODELS entry ${model.entryName}${model.isDefault ? ', the default' : ''})`);
    throw new Error(
      [
        `--embed-model ${unknown.join(', ')}: not loaded by the inference service. It loaded (INFERENCE_EMBED_MODELS=${process.env.INFERENCE_EMBED_MODELS || 'unset: the bundled models'}):`,
        ...list,
        'Name one by its id, its entry or its label; to measure another model, load it: INFERENCE_EMBED_MODELS=hf:owner/repo,... (inference/README.md).',
      ].join('\n'),
    );
  }
  return loaded.filter((model) => asked.some((name) => matches(model, name)));
}

/** `--embed-model` values, each possibly a comma-separated list (ids hold no commas), trimmed, empty ones dropped. */
export const namesOf = (values: readonly string[] = []): string[] =>
  values.flatMap((value) => value.split(',')).map((name) => name.trim()).filter(Boolean);
