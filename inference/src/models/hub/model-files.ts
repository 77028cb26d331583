import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The files of a model in the Hugging Face layout (`config.json`, `preprocessor_config.json`, ONNX files under
 * `onnx/`, `tokenizer.json` and its companions), wherever they are: a local folder, or a hub repository whose files
 * are fetched into the cache on first use (hub.ts). The loaders of model families read a model through this alone.
 */
export interface ModelFiles {
  /** Where the files come from, for model ids and messages: the folder's absolute path, or `hf:owner/repo@commit`. */
  readonly source: string;
  /** Every file of the model, as paths relative to its root with `/` between folders. */
  readonly names: readonly string[];
  /** The local path of one of `names`, fetched first where it is not local yet; any other name throws, naming it. */
  localPath(name: string): Promise<string>;
}

/** Every file below `root`, relative, with `/`. */
function listFiles(root: string, dir = ''): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = dir ? `${dir}/${entry.name}` : entry.name;
    return entry.isDirectory() ? listFiles(root, relative) : [relative];
  });
}

/** A model folder on disk; one that is not a folder stops the service with its path. */
export function folderModelFiles(folder: string): ModelFiles {
  const root = path.resolve(folder);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`model folder ${root} does not exist`);
  const names = listFiles(root).sort();
  return {
    source: root,
    names,
    localPath: async (name) => {
      if (!names.includes(name)) throw new Error(`model folder ${root} has no ${name}`);
      return path.join(root, ...name.split('/'));
    },
  };
}
