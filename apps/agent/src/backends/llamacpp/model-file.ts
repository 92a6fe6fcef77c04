/**
 * Which GGUF file the embedded backend loads.
 *
 * - `--model <path>`: that file.
 * - `--model hf:owner/repo/file.gguf` (or an https URL): downloaded once into the cache directory
 *   by node-llama-cpp's `resolveModelFile`, then reused.
 * - none: `stories260K.gguf` from the models search path — `$IOP_MODELS_PATH` (colon-separated),
 *   then `./models`, `../shared/models`, `../../shared/models` relative to the working directory
 *   and to the repository root (the nearest parent of this file holding a package.json with
 *   `workspaces`), then `<root>/../shared/models`; failing all, `hf:ggml-org/models/tinyllamas/stories260K.gguf`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { NodeLlamaCpp } from './library.js';

export const DEFAULT_MODEL_FILE = 'stories260K.gguf';
export const DEFAULT_MODEL_URI = 'hf:ggml-org/models/tinyllamas/stories260K.gguf';

/** Directories searched for the default model, in order. */
export function modelSearchPath(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string[] {
  const dirs = (env.IOP_MODELS_PATH ?? '').split(':').filter((dir) => dir !== '');
  const relative = ['models', join('..', 'shared', 'models'), join('..', '..', 'shared', 'models')];
  for (const dir of relative) dirs.push(resolve(cwd, dir));
  const root = repositoryRoot(__dirname);
  if (root !== undefined) {
    for (const dir of relative) dirs.push(resolve(root, dir));
  }
  return [...new Set(dirs)];
}

/** The nearest ancestor of `from` whose package.json declares workspaces. */
export function repositoryRoot(from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown }).workspaces !== undefined) return dir;
      } catch {
        // not JSON: keep walking
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The local path of the model to load; downloads a remote model once. */
export async function resolveModelPath(library: NodeLlamaCpp, model: string | undefined, cacheDir = defaultCacheDir()): Promise<string> {
  if (model !== undefined && !isRemote(model)) {
    const path = resolve(model);
    if (!existsSync(path)) throw new Error(`--model file not found: ${path}`);
    return path;
  }
  if (model === undefined) {
    for (const dir of modelSearchPath()) {
      const path = join(dir, DEFAULT_MODEL_FILE);
      if (existsSync(path)) return path;
    }
  }
  return library.resolveModelFile(model ?? DEFAULT_MODEL_URI, { directory: cacheDir, cli: false });
}

function isRemote(model: string): boolean {
  return model.startsWith('hf:') || model.startsWith('https://') || model.startsWith('http://');
}

function defaultCacheDir(): string {
  return process.env.IOP_MODEL_CACHE ?? join(homedir(), '.cache', 'iop', 'models');
}
