/**
 * Which GGUF file the embedded backend loads.
 *
 * - `--model <path>`: that file.
 * - `--model hf:owner/repo/file.gguf` (or an https URL): downloaded once into the cache directory
 *   by node-llama-cpp's `resolveModelFile`, then reused.
 * - none: `stories260K.gguf` from the models search path — the `modelsPath` setting
 *   (`--models-path` / `IOP_MODELS_PATH`, colon-separated),
 *   then `./models`, `../shared/models`, `../../shared/models` relative to the working directory
 *   and to the repository root (the nearest parent of this file holding a package.json with
 *   `workspaces`), then `<root>/../shared/models`; failing all, `hf:ggml-org/models/tinyllamas/stories260K.gguf`.
 */
import { sleep } from '@iop/core';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { NodeLlamaCpp } from './library.js';

export const DEFAULT_MODEL_FILE = 'stories260K.gguf';
export const DEFAULT_MODEL_URI = 'hf:ggml-org/models/tinyllamas/stories260K.gguf';

/** Where the default model is looked for and downloaded models are kept: the agent's settings of those names. */
export interface ModelFileOptions {
  /** Directories searched first for the default model, colon-separated like PATH. */
  modelsPath?: string;
  /** Directory of downloaded models. Default `~/.cache/iop/models`. */
  modelCache?: string;
  /** Longest wait for the download host's answer before a download is given up, ms. Default 5 000. */
  downloadProbeTimeoutMs?: number;
}

/** Directories searched for the default model, in order: `modelsPath` (colon-separated) first. */
export function modelSearchPath(modelsPath = '', cwd = process.cwd()): string[] {
  const dirs = modelsPath.split(':').filter((dir) => dir !== '');
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
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown }).workspaces !== undefined)
          return dir;
      } catch {
        // not JSON: keep walking
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The local path of the model to load; downloads a remote model once. */
export async function resolveModelPath(
  library: NodeLlamaCpp,
  model: string | undefined,
  files: ModelFileOptions = {},
): Promise<string> {
  if (model !== undefined && !isRemote(model)) {
    const path = resolve(model);
    if (!existsSync(path)) throw new Error(`--model file not found: ${path}`);
    return path;
  }
  if (model === undefined) {
    for (const dir of modelSearchPath(files.modelsPath)) {
      const path = join(dir, DEFAULT_MODEL_FILE);
      if (existsSync(path)) return path;
    }
  }
  const uri = model ?? DEFAULT_MODEL_URI;
  const directory = files.modelCache ?? join(homedir(), '.cache', 'iop', 'models');
  return withReachability(library.resolveModelFile(uri, { directory, cli: false }), uri, model === undefined, files);
}

/** How long the download host may take to answer a HEAD request before the download is given up, ms (default). */
export const DOWNLOAD_PROBE_TIMEOUT_MS = 5_000;
/** After a failed probe, how long a download that may still be a cache hit is given, ms. */
const CACHE_GRACE_MS = 2_000;

/** The origin a model URI downloads from (`hf:` → Hugging Face). */
export function downloadOrigin(uri: string): string {
  return uri.startsWith('hf:') ? 'https://huggingface.co' : new URL(uri).origin;
}

/**
 * node-llama-cpp's download retries for minutes when the network is unreachable, printing
 * nothing. Alongside it, a HEAD request to the download host checks reachability; when it fails
 * (within `downloadProbeTimeoutMs`) and the download is still pending shortly after (a cached
 * file resolves at once), the download is given up with a message that says what to do.
 * @throws Error naming the host, the reason, the models search path and `--model`.
 */
async function withReachability(
  download: Promise<string>,
  uri: string,
  isDefault: boolean,
  files: ModelFileOptions,
): Promise<string> {
  const origin = downloadOrigin(uri);
  const timeoutMs = files.downloadProbeTimeoutMs ?? DOWNLOAD_PROBE_TIMEOUT_MS;
  let settled = false;
  void download.then(
    () => (settled = true),
    () => (settled = true),
  );
  const probe = async (): Promise<never> => {
    try {
      const response = await fetch(origin, {
        method: 'HEAD',
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return await new Promise<never>(() => undefined); // reachable: the download decides
    } catch (error) {
      await sleep(CACHE_GRACE_MS, undefined, { unref: true });
      if (settled) return await new Promise<never>(() => undefined);
      const reason =
        error instanceof Error
          ? error.name === 'TimeoutError'
            ? `no answer within ${timeoutMs} ms`
            : ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
      const local = isDefault
        ? `put ${DEFAULT_MODEL_FILE} in one of ${modelSearchPath(files.modelsPath).join(', ')} (or set IOP_MODELS_PATH), or `
        : '';
      throw new Error(
        `cannot download the model ${uri}: ${origin} is unreachable (${reason}). Without network, ${local}pass a local GGUF file with --model /path/model.gguf (IOP_MODEL)`,
        { cause: error },
      );
    }
  };
  return Promise.race([download, probe()]);
}

function isRemote(model: string): boolean {
  return model.startsWith('hf:') || model.startsWith('https://') || model.startsWith('http://');
}
