/**
 * The endpoints of every registered dialect (the `Dialect` contract of @iop/core), compiled once
 * for the per-request lookups the edge makes:
 * - `match(method, url)`: the endpoint a request is for, with its path parameters and query. An
 *   exact path is one `Map` lookup; a parameterised one (`/v1beta/models/{model}:generateContent`)
 *   is tried only when the path starts with its literal head, one anchored regex each, most
 *   specific (most literal characters) first.
 * - `allowed(path)`: the methods some endpoint serves on `path` (a 405's `Allow`).
 * - `dialectFor(path)`: whose envelope a failure on `path` is rendered in: the dialect of an
 *   endpoint the path matches (any method), else the one with the longest matching path prefix.
 * - `keySources(path)`: where a client may send its key on `path`: `Authorization: Bearer`, every
 *   dialect's key headers, and the query parameter of the path's dialect (Gemini `?key=`).
 * An endpoint several dialects declare (`GET /v1/models`) goes to the first whose `claims`
 * accepts the request, else to the one without `claims`.
 */
import type { Dialect, DialectEndpoint } from '@iop/core';

/** A compiled endpoint and what serves it (`T`: the edge's handler). */
export interface RouteEntry<T> {
  dialect: Dialect;
  endpoint: DialectEndpoint;
  handler: T;
}

export interface RouteMatch<T> {
  entry: RouteEntry<T>;
  /** The endpoint's path parameters, percent-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
}

export interface KeySources {
  /** Headers whose whole value is the key, tried in order. */
  headers: readonly string[];
  queryParam?: string;
  /** The headers the path's own dialect documents (what a 401 tells the client); `headers` when absent. */
  named?: readonly string[];
}

interface Pattern<T> {
  /** The literal before the first parameter: a cheap pre-check. */
  head: string;
  /** Characters of the path that are not parameters (its specificity). */
  literal: number;
  regex: RegExp;
  names: string[];
  entries: Array<RouteEntry<T>>;
}

/** `{name}` → a greedy capture: `.+` up to the last occurrence of the literal that follows. */
function compile(path: string): { head: string; literal: number; regex: RegExp; names: string[] } {
  const names: string[] = [];
  let source = '^';
  let last = 0;
  for (const match of path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    source += escapeRegex(path.slice(last, match.index));
    source += '(.+)';
    names.push(match[1]!);
    last = match.index + match[0].length;
  }
  source += `${escapeRegex(path.slice(last))}$`;
  const literal = path.replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, '').length;
  return { head: path.slice(0, path.indexOf('{')), literal, regex: new RegExp(source), names };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The query of a URL without one, shared by every such match: read it, never change it. */
const NO_QUERY = new URLSearchParams();

export class RouteTable<T> {
  /** Method → exact path → its entries (no key built per lookup). */
  private readonly exact = new Map<string, Map<string, Array<RouteEntry<T>>>>();
  /** Exact path → the methods served on it, and the dialect that answers failures there (the first registered). */
  private readonly exactPaths = new Map<string, { methods: Set<string>; dialect: Dialect }>();
  private readonly patterns = new Map<string, Pattern<T>>();
  /** The patterns, most specific first. */
  private readonly ordered: Array<Pattern<T>>;
  private readonly prefixes: Array<{ prefix: string; dialect: Dialect }> = [];
  private readonly keyHeaders: string[];
  /** Each dialect's key sources, built once. */
  private readonly sources = new Map<Dialect, KeySources>();

  constructor(entries: ReadonlyArray<RouteEntry<T>>) {
    const headers = new Set<string>();
    const dialects = new Set<Dialect>();
    for (const entry of entries) {
      dialects.add(entry.dialect);
      const { method, path } = entry.endpoint;
      if (!path.includes('{')) {
        let byPath = this.exact.get(method);
        if (byPath === undefined) this.exact.set(method, (byPath = new Map()));
        push(byPath, path, entry);
        let known = this.exactPaths.get(path);
        if (known === undefined) this.exactPaths.set(path, (known = { methods: new Set(), dialect: entry.dialect }));
        known.methods.add(method);
        continue;
      }
      const key = `${method} ${path}`;
      let pattern = this.patterns.get(key);
      if (pattern === undefined) this.patterns.set(key, (pattern = { ...compile(path), entries: [] }));
      pattern.entries.push(entry);
    }
    this.ordered = [...this.patterns.values()].sort((a, b) => b.literal - a.literal);
    for (const dialect of dialects) {
      for (const header of dialect.keyHeaders) headers.add(header);
      for (const prefix of dialect.pathPrefixes) this.prefixes.push({ prefix, dialect });
    }
    this.prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
    this.keyHeaders = [...headers];
    for (const dialect of dialects) {
      const sources: KeySources = { headers: this.keyHeaders, named: dialect.keyHeaders };
      if (dialect.keyQueryParam !== undefined) sources.queryParam = dialect.keyQueryParam;
      this.sources.set(dialect, sources);
    }
  }

  /**
   * The endpoint `method` and `url` (path and query, as sent) ask for, if any; `HEAD` matches `GET`.
   * @throws URIError when a path parameter has broken percent-encoding (the error handler's 400).
   */
  match(
    method: string,
    url: string,
    headers: Readonly<Record<string, string | string[] | undefined>> = {},
  ): RouteMatch<T> | undefined {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? NO_QUERY : new URLSearchParams(url.slice(q + 1));
    const verb = method === 'HEAD' ? 'GET' : method;
    const exact = this.exact.get(verb)?.get(path);
    if (exact !== undefined) return { entry: pick(exact, headers, query), params: {}, query };
    const shape = this.shapeOf(path);
    if (shape === undefined) return undefined;
    for (const pattern of shape.patterns) {
      if (pattern.entries[0]!.endpoint.method !== verb) continue;
      const found = pattern.regex.exec(path)!;
      const params: Record<string, string> = {};
      pattern.names.forEach((name, i) => (params[name] = decodeURIComponent(found[i + 1]!)));
      return { entry: pick(pattern.entries, headers, query), params, query };
    }
    return undefined;
  }

  /** Methods some endpoint serves on `path` (no query). */
  allowed(path: string): string[] {
    const methods = new Set(this.exactPaths.get(path)?.methods);
    for (const pattern of this.shapeOf(path)?.patterns ?? []) methods.add(pattern.entries[0]!.endpoint.method);
    return [...methods];
  }

  /**
   * The parameterised patterns (any method) of the most specific shape `path` has: the patterns
   * with the most literal characters among those that match. `/v1beta/models/{model}:generateContent`
   * is more specific than `/v1beta/models/{model}`, so a `GET` of a `:generateContent` path is a
   * 405, not a lookup of a model named `m:generateContent`.
   */
  private shapeOf(path: string): { patterns: Array<Pattern<T>> } | undefined {
    let best: Array<Pattern<T>> | undefined;
    for (const pattern of this.ordered) {
      if (best !== undefined && pattern.literal < best[0]!.literal) break;
      if (!path.startsWith(pattern.head) || !pattern.regex.test(path)) continue;
      (best ??= []).push(pattern);
    }
    return best === undefined ? undefined : { patterns: best };
  }

  /** The dialect whose envelope a failure on `path` is rendered in (see the module docstring). */
  dialectFor(path: string): Dialect | undefined {
    const known = this.exactPaths.get(path);
    if (known !== undefined) return known.dialect;
    const shape = this.shapeOf(path);
    if (shape !== undefined) return shape.patterns[0]!.entries[0]!.dialect;
    return this.prefixes.find((candidate) => path.startsWith(candidate.prefix))?.dialect;
  }

  /** Where a client may send its key on `path`. */
  keySources(path: string): KeySources {
    const dialect = this.dialectFor(path);
    return (dialect === undefined ? undefined : this.sources.get(dialect)) ?? { headers: this.keyHeaders };
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** The entry of a claimed request, else the default (the one without `claims`), else the first. */
function pick<T>(
  entries: ReadonlyArray<RouteEntry<T>>,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  query: URLSearchParams,
): RouteEntry<T> {
  if (entries.length === 1) return entries[0]!;
  for (const entry of entries) if (entry.dialect.claims?.(headers, query) === true) return entry;
  return entries.find((entry) => entry.dialect.claims === undefined) ?? entries[0]!;
}
