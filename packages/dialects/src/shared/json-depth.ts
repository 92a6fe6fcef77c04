/**
 * A nesting-depth limit for client-supplied JSON that later stages walk recursively: JSON
 * Schemas (tool parameters, `response_format` / `text.format` / `output_config.format`
 * json_schema) and Anthropic `tool_use.input` objects (serialized to arguments).
 *
 * Every later stage walks a schema recursively: the backend encoders' keyword strip, ajv's
 * compiler in the stream gate, `JSON.stringify` for count_tokens and the backend body. A schema
 * nested a few thousand levels deep exhausts Node's stack (default `--stack-size`: 984 KiB) in
 * whichever runs first, so a client could turn one request into
 * `RangeError: Maximum call stack size exceeded`. The decoders reject such a schema up front
 * with a 400 naming the field, through this one iterative walk (no recursion, so it cannot
 * overflow itself).
 */
import { invalidRequest } from '@iop/core';

/**
 * Maximum nesting of JSON objects and arrays in one checked value, counting the value itself as
 * level 1: 128.
 *
 * Why 128: each level of a nested object schema costs two JSON levels (the schema and its
 * `properties` map, `{"type":"object","properties":{"x":{…}}}`), so 128 admits 64 nested object
 * schemas, far more than real schemas use (OpenAI's Structured Outputs allows 10 levels of object
 * nesting; coding clients' and MCP servers' tool schemas nest a handful), while staying far
 * below the depth at which the recursive walkers above run out of stack (thousands of levels).
 */
export const MAX_JSON_DEPTH = 128;

/**
 * The nesting depth of a JSON value (objects and arrays; a scalar is 0, `{}` is 1, `{"a":[]}`
 * is 2), found with an explicit stack. Stops as soon as the depth passes `limit` and returns
 * `limit + 1`, so a hostile value costs at most the nodes above that depth.
 */
export function jsonDepth(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'object' || value === null) return 0;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  let deepest = 0;
  while (values.length > 0) {
    const current = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > limit) return limit + 1;
    }
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return deepest;
}

/**
 * Checks that `value` nests at most `maxDepth` levels of objects and arrays.
 * @throws IopError 400 `invalid_request` whose `param` is `param` (e.g. `tools[0].function.parameters`).
 */
export function assertJsonDepth(value: unknown, param: string, maxDepth = MAX_JSON_DEPTH): void {
  if (jsonDepth(value, maxDepth) > maxDepth) {
    throw invalidRequest(`${param}: nests more than ${maxDepth} levels of objects and arrays`, param);
  }
}
