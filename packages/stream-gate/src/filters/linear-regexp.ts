/**
 * The regular-expression engine ajv uses for client schemas (`pattern`, `patternProperties`):
 * re2js, a pure-JavaScript port of RE2, which matches in time linear in the input.
 *
 * Why: the schemas come from clients (tool `parameters`, `response_format` json_schema) and the
 * checked strings from the model. With V8's backtracking `RegExp`, a pattern such as `^(a+)+$`
 * against `aaaa…a!` takes exponential time and blocks the edge's event loop for every request.
 * ajv lets the engine be replaced through `code.regExp` (ajv docs, "Options → code.regExp",
 * which names RE2 for untrusted schemas).
 *
 * Syntax: JSON Schema patterns are ECMA-262 regular expressions (2020-12 Validation §6.3.3,
 * Core §6.4); `RE2JS.translateRegExp` maps the ECMA-only spellings (`\u{…}`, `(?<name>…)`,
 * `\cX`, an unescaped `/`) to RE2's, and RE2 matches by code point as the `u` flag does.
 * Lookbehinds are enabled (re2js evaluates them in linear time). Backreferences and lookaheads
 * have no linear-time evaluation: such a pattern throws here, ajv's `compile` throws, and the
 * schema cache reports the schema as not compilable (the filter disables its check with a
 * warning; the request never fails for it).
 */
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types';
import type { RE2JS } from 're2js';

let re2jsClass: typeof RE2JS | undefined;

/**
 * re2js, loaded with the first pattern: it is one 250 KB script, and most processes never compile a client's pattern.
 */
function re2js(): typeof RE2JS {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  re2jsClass ??= (require('re2js') as { RE2JS: typeof RE2JS }).RE2JS;
  return re2jsClass;
}

/** A compiled pattern as ajv holds it. */
class LinearRegExpLike implements RegExpLike {
  constructor(
    private readonly compiled: RE2JS,
    private readonly source: string,
  ) {}

  test(input: string): boolean {
    return this.compiled.test(input);
  }

  /** `/pattern/flags`: ajv keys its compiled patterns by `toString()`, so it must name the pattern. */
  toString(): string {
    return this.source;
  }
}

/**
 * Compiles `pattern` (ECMA-262 syntax) for ajv. `flags` is ajv's: `"u"` (its default
 * `unicodeRegExp: true`) or `""`; RE2 always matches by code point, so both behave as `"u"`.
 * `test(s)` is true when the pattern matches anywhere in `s`, as `RegExp.prototype.test`.
 * @throws Error naming the pattern when RE2 cannot compile it (backreference, lookahead, …).
 */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, flags: string): RegExpLike => {
    const RE2 = re2js();
    let compiled: RE2JS;
    try {
      compiled = RE2.compile(RE2.translateRegExp(pattern), RE2.LOOKBEHINDS);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(
        `pattern ${JSON.stringify(pattern)} needs a backtracking regex engine (backreferences and lookaheads are not supported): ${reason}`,
        {
          cause: error,
        },
      );
    }
    return new LinearRegExpLike(compiled, `/${pattern}/${flags}`);
  },
  // How ajv's standalone code generation would reference this engine (the gate does not use it).
  { code: 'require("@iop/stream-gate").linearRegExp' },
);
