/**
 * The served model names some provider has served since the edge started (agent registrations and
 * direct providers), so that a model whose only agent is restarting is told apart from a model
 * that never existed: the first is a 503 `no_capacity` with `Retry-After` (SDKs retry it), the
 * second a 404 `model_not_found` (see `ProviderPool.acquire`).
 *
 * Bounded: at most `capacity` names, the least recently registered forgotten first (a Map keeps
 * insertion order; re-adding a name moves it to the end). An agent can register any names, so an
 * unbounded set would let a misbehaving one grow the edge's memory without limit.
 */
export const DEFAULT_SERVED_NAMES_CAPACITY = 4096;

export class ServedNames {
  private readonly names = new Map<string, true>();

  /** @throws RangeError when `capacity` is not a positive integer. */
  constructor(private readonly capacity = DEFAULT_SERVED_NAMES_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('served names: capacity must be a positive integer');
  }

  /** Records `name` as served now (the most recent). */
  add(name: string): void {
    if (this.names.has(name)) this.names.delete(name);
    else if (this.names.size >= this.capacity) this.names.delete(this.names.keys().next().value!);
    this.names.set(name, true);
  }

  /** Whether some provider has served `name` (among the `capacity` most recently registered names). */
  has(name: string): boolean {
    return this.names.has(name);
  }

  get size(): number {
    return this.names.size;
  }
}
