/**
 * Per-key metric labels (`metrics.keyLabels`, opt-in): the `key` label of
 * `iop_key_requests_total` and `iop_key_tokens_total`, bounded so a fleet of keys cannot grow the
 * series without limit. With an allow-list (`keys`), those key ids get their own label and every
 * other key is `other`; without one, the first `maxKeys` key ids seen since the edge started get
 * theirs (stable: a key keeps its label while the edge runs) and later ones are `other`. So `key`
 * takes at most `keys.length + 1` (or `maxKeys + 1`) values, and each series family holds at most
 * that many times its model × status (or kind) combinations. Key ids are `key_…` (managed keys),
 * the config file's ids, `legacy:<hash prefix>` for a plain `apiKeys` entry and `open` without
 * keys: never a secret.
 */

export interface KeyLabelsConfig {
  enabled: boolean;
  /** Key ids labelled by name; empty = the first `maxKeys` seen. */
  keys: string[];
  /** Without an allow-list: key ids labelled by name, the first seen since start. */
  maxKeys: number;
}

/** The label of the keys beyond the allow-list or `maxKeys`. */
export const OTHER_KEYS = 'other';

export class KeyLabels {
  private readonly allowed: ReadonlySet<string> | undefined;
  private readonly seen = new Set<string>();

  constructor(private readonly config: KeyLabelsConfig) {
    this.allowed = config.keys.length > 0 ? new Set(config.keys) : undefined;
  }

  /** The `key` label of a key id: its id, or `other`. */
  label(keyId: string): string {
    if (this.allowed !== undefined) return this.allowed.has(keyId) ? keyId : OTHER_KEYS;
    if (this.seen.has(keyId)) return keyId;
    if (this.seen.size >= this.config.maxKeys) return OTHER_KEYS;
    this.seen.add(keyId);
    return keyId;
  }
}
