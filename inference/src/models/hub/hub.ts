import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fetchHubFile, hubRequest, type HubRef, type HubRepo, type HubSettings } from './hub-file.ts';
import type { ModelFiles } from './model-files.ts';

export type HubOptions = {
  /** Progress and completion lines (the service passes console.log). */
  readonly log: (line: string) => void;
  readonly fetch?: typeof fetch;
};

export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';
/** Under the repository's git-ignored .local/, when neither HF_HUB_CACHE nor HF_HOME is set. */
export const DEFAULT_HUB_CACHE = path.resolve(import.meta.dirname, '../../../../.local/huggingface/hub');

const COMMIT = /^[0-9a-f]{40}$/;
// The hub's repository names (huggingface_hub's validate_repo_id); revisions may hold `/` (`refs/pr/1`) but no `..`.
const NAME = '[A-Za-z0-9_](?:[\\w.-]*[A-Za-z0-9_])?';
const HUB_REF = new RegExp(`^hf:(${NAME}/${NAME})(?:@([\\w.-]+(?:/[\\w.-]+)*))?$`);

/** `hf:owner/repo` or `hf:owner/repo@revision` (default `main`); anything else throws, naming the entry. */
export function parseHubRef(text: string): HubRef {
  const match = HUB_REF.exec(text);
  const [repo, revision = 'main'] = match ? [match[1]!, match[2]] : [];
  if (!repo || /--|\.\./.test(repo) || revision.split('/').some((part) => part === '.' || part === '..')) {
    throw new Error(`"${text}" is not a hub model: expected hf:<owner>/<repo> or hf:<owner>/<repo>@<revision>`);
  }
  return { repo, revision };
}

/**
 * HF_ENDPOINT (default https://huggingface.co), the cache (HF_HUB_CACHE, else HF_HOME's hub/, as huggingface_hub
 * reads them, else DEFAULT_HUB_CACHE) and HF_TOKEN; an endpoint that is not an http(s) URL stops the service.
 */
export function hubSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): HubSettings {
  const endpoint = (env.HF_ENDPOINT || DEFAULT_HUB_ENDPOINT).replace(/\/+$/, '');
  if (!/^https?:$/.test(URL.parse(endpoint)?.protocol ?? '')) throw new Error(`HF_ENDPOINT must be an http(s) URL, got "${env.HF_ENDPOINT}"`);
  const cacheDir = env.HF_HUB_CACHE ? path.resolve(env.HF_HUB_CACHE) : env.HF_HOME ? path.resolve(env.HF_HOME, 'hub') : DEFAULT_HUB_CACHE;
  return { endpoint, cacheDir, token: env.HF_TOKEN || undefined };
}

/**
 * A hub model's files: the revision resolved to its commit, and each file fetched into the cache (huggingface_hub's
 * layout) on its first `localPath`. Once the commit's file list is cached (`.listing/COMMIT.json`, written by the first
 * listing), a revision that `refs/` names is not asked again, nor a file already in the snapshot: a cached model loads
 * without the network.
 */
export async function hubModelFiles(ref: HubRef, settings: HubSettings, options: HubOptions): Promise<ModelFiles> {
  const hub: HubRepo = {
    ...ref,
    ...settings,
    storage: path.join(settings.cacheDir, `models--${ref.repo.replace('/', '--')}`),
    fetch: options.fetch ?? fetch,
    log: options.log,
  };
  const { commit, names } = (await cachedListing(hub)) ?? (await fetchListing(hub));
  const known = new Set(names);
  const fetched = new Map<string, Promise<string>>();
  return {
    source: `hf:${ref.repo}@${commit}`,
    names,
    localPath: async (name) => {
      if (!known.has(name)) throw new Error(`hf:${ref.repo}@${ref.revision} has no ${name}`);
      // Loaders may ask for one file twice at once: one download.
      if (!fetched.has(name)) {
        const file = fetchHubFile(hub, commit, name);
        fetched.set(name, file);
        file.catch(() => fetched.delete(name));
      }
      return fetched.get(name)!;
    },
  };
}

const listingFile = (hub: HubRepo, commit: string) => path.join(hub.storage, '.listing', `${commit}.json`);
const refFile = (hub: HubRepo) => path.join(hub.storage, 'refs', ...hub.revision.split('/'));

async function cachedListing(hub: HubRepo): Promise<{ commit: string; names: string[] } | undefined> {
  const cached = existsSync(refFile(hub)) ? (await readFile(refFile(hub), 'utf8')).trim() : undefined;
  // A ref names a snapshot folder: only a commit is taken from it.
  const commit = COMMIT.test(hub.revision) ? hub.revision : cached !== undefined && COMMIT.test(cached) ? cached : undefined;
  if (commit && existsSync(listingFile(hub, commit))) return { commit, names: JSON.parse(await readFile(listingFile(hub, commit), 'utf8')) };
  return undefined;
}

/** The revision's commit and files from the hub; the list is kept for offline starts, the ref as huggingface_hub keeps it. */
async function fetchListing(hub: HubRepo): Promise<{ commit: string; names: string[] }> {
  const url = `${hub.endpoint}/api/models/${hub.repo}/revision/${encodeURIComponent(hub.revision)}`;
  const response = await hubRequest(hub, url, {}, 'the file list');
  const where = `hf:${hub.repo}@${hub.revision}`;
  if ([401, 403, 404].includes(response.status)) {
    const access = hub.token ? 'HF_TOKEN has no access to it' : 'a private or gated one needs HF_TOKEN';
    throw new Error(`${where}: ${hub.endpoint} has no such repository or revision, or ${access} (HTTP ${response.status})`);
  }
  if (!response.ok) throw new Error(`${where}: ${hub.endpoint} answered HTTP ${response.status} for the file list`);
  const info = (await response.json()) as { sha?: unknown; siblings?: { rfilename?: unknown }[] };
  const names = Array.isArray(info.siblings) ? info.siblings.map((sibling) => sibling.rfilename) : [];
  // A name is a path in the snapshot folder: none may climb out of it.
  const safe = names.every((name) => typeof name === 'string' && name.split('/').every((part) => part && part !== '.' && part !== '..'));
  if (typeof info.sha !== 'string' || !COMMIT.test(info.sha) || !names.length || !safe) {
    throw new Error(`${where}: ${hub.endpoint} answered a revision without a commit sha and file names`);
  }
  await writeAtomically(listingFile(hub, info.sha), JSON.stringify(names));
  if (hub.revision !== info.sha) await writeAtomically(refFile(hub), info.sha);
  return { commit: info.sha, names: names as string[] };
}

/** Whole or not at all: a start cut short leaves no half-written list or ref behind. */
async function writeAtomically(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
}
