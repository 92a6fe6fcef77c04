/**
 * Gemini `GenerateContentRequest` (https://ai.google.dev/api/generate-content#request-body;
 * docs/protocols.md "Gemini request") → hub `InferenceRequest`. The model and the stream mode are
 * in the URL: `POST /v1beta/models/{model}:generateContent` or `:streamGenerateContent`
 * (`?alt=sse` for SSE, otherwise a JSON array).
 *
 * Field decisions:
 * - `contents`, `systemInstruction`: contents-decode.ts; `tools`, `toolConfig`: tools-decode.ts.
 * - `generationConfig`: `maxOutputTokens` (≥ 1), `temperature` (0–2), `topP` (0–1), `topK` (≥ 0),
 *   `seed`, `stopSequences` (at most 5 strings, Google's limit), `presencePenalty` and
 *   `frequencyPenalty` (to the backend as `presence_penalty`/`frequency_penalty`).
 * - `candidateCount`: only 1 (the gate checks one candidate); more is a 400 naming the field.
 * - Structured output: `responseMimeType: "application/json"` alone → JSON mode; with
 *   `responseJsonSchema` (JSON Schema) or `responseSchema` (Google's subset, converted) → a JSON
 *   schema the stream gate's structured-output filter checks. `text/x.enum` and a schema without
 *   `application/json` are 400s; `text/plain` is plain text.
 * - `thinkingConfig`: `thinkingBudget: 0` turns reasoning off, another budget (`-1`: dynamic) or a
 *   `thinkingLevel` turns it on (the level as the effort); both at once is a 400 as at Google.
 *   `includeThoughts` sends reasoning back as `thought` parts. Absent: the model's default.
 * - `responseModalities` other than `TEXT` is a 400; `cachedContent` is a 400 (iop keeps no
 *   cached contents). `safetySettings`, `serviceTier`, `labels`, logprobs and media settings
 *   are ignored; an unknown field is ignored with a warning.
 * @throws IopError `invalid_request` / `unsupported_field` (400) with `param` naming the field.
 */
import type { InferenceRequest, ReasoningConfig, RequestTarget, ResponseFormat } from '@iop/core';
import { IopError, invalidRequest } from '@iop/core';
import { isAbsent, path, type JsonObject } from '../shared/fields.js';
import { assertJsonDepth } from '../shared/json-depth.js';
import { decodeContents, decodeSystemInstruction } from './contents-decode.js';
import { field, geminiFields, isKnown } from './fields.js';
import { decodeToolConfig, decodeTools, toJsonSchema } from './tools-decode.js';
import type { GeminiState } from './wire-types.js';

const { readArray, readBoolean, readInteger, readNumber, readObject, readString, readEnum } = geminiFields;

const KNOWN = new Set([
  'contents',
  'systemInstruction',
  'tools',
  'toolConfig',
  'generationConfig',
  'safetySettings',
  'cachedContent',
  'model',
]);
const IGNORED = new Set(['safetySettings', 'serviceTier', 'labels', 'store']);
const LEVELS = ['THINKING_LEVEL_UNSPECIFIED', 'MINIMAL', 'LOW', 'MEDIUM', 'HIGH'] as const;
const GC = 'generationConfig';

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', `Invalid value at '${param}': ${message}`, { param });
}

function decodeThinking(value: unknown, state: GeminiState): ReasoningConfig {
  const param = path(GC, 'thinkingConfig');
  const config = readObject(value, param);
  const include = field(config, 'includeThoughts');
  if (!isAbsent(include)) state.includeThoughts = readBoolean(include, path(param, 'includeThoughts'));
  const budgetValue = field(config, 'thinkingBudget');
  const levelValue = field(config, 'thinkingLevel');
  if (!isAbsent(budgetValue) && !isAbsent(levelValue))
    throw invalidRequest(`Invalid value at '${param}': thinkingBudget and thinkingLevel cannot both be set`, param);
  const reasoning: ReasoningConfig = { enabled: true };
  if (!isAbsent(budgetValue)) {
    const budget = readInteger(budgetValue, path(param, 'thinkingBudget'), { min: -1 });
    if (budget === 0) return { enabled: false };
    if (budget > 0) reasoning.budgetTokens = budget;
  }
  if (!isAbsent(levelValue)) {
    const level = readEnum(levelValue, path(param, 'thinkingLevel'), LEVELS);
    if (level !== 'THINKING_LEVEL_UNSPECIFIED') reasoning.effort = level.toLowerCase();
  }
  return reasoning;
}

function decodeResponseFormat(config: JsonObject): ResponseFormat | undefined {
  const mimeValue = field(config, 'responseMimeType');
  const mime = isAbsent(mimeValue) ? 'text/plain' : readString(mimeValue, path(GC, 'responseMimeType'));
  const jsonSchema = field(config, 'responseJsonSchema');
  const schema = field(config, 'responseSchema');
  if (mime === 'text/plain') {
    if (!isAbsent(jsonSchema) || !isAbsent(schema))
      throw invalidRequest(
        `Invalid value at '${path(GC, 'responseMimeType')}': a response schema needs application/json`,
        path(GC, 'responseMimeType'),
      );
    return undefined;
  }
  if (mime !== 'application/json')
    throw unsupported(
      `${JSON.stringify(mime)} is not supported by this backend; use application/json or text/plain`,
      path(GC, 'responseMimeType'),
    );
  let decoded: JsonObject | undefined;
  if (!isAbsent(jsonSchema)) decoded = readObject(jsonSchema, path(GC, 'responseJsonSchema'));
  else if (!isAbsent(schema))
    decoded = readObject(toJsonSchema(readObject(schema, path(GC, 'responseSchema'))), path(GC, 'responseSchema'));
  if (decoded === undefined) return { type: 'json_object' };
  assertJsonDepth(decoded, path(GC, 'responseSchema'));
  return { type: 'json_schema', name: 'response', schema: decoded, strict: true };
}

function decodeGenerationConfig(value: unknown, request: InferenceRequest, state: GeminiState): void {
  const config = readObject(value, GC);
  const read = (name: string) => field(config, name);
  if (!isAbsent(read('maxOutputTokens')))
    request.maxOutputTokens = readInteger(read('maxOutputTokens'), path(GC, 'maxOutputTokens'), { min: 1 });
  if (!isAbsent(read('temperature')))
    request.temperature = readNumber(read('temperature'), path(GC, 'temperature'), { min: 0, max: 2 });
  if (!isAbsent(read('topP'))) request.topP = readNumber(read('topP'), path(GC, 'topP'), { min: 0, max: 1 });
  if (!isAbsent(read('topK'))) request.topK = readInteger(read('topK'), path(GC, 'topK'), { min: 0 });
  if (!isAbsent(read('seed')))
    request.seed = readInteger(read('seed'), path(GC, 'seed'), { min: -(2 ** 31), max: 2 ** 32 - 1 });
  if (!isAbsent(read('stopSequences'))) {
    const stops = readArray(read('stopSequences'), path(GC, 'stopSequences')).map((stop, i) =>
      readString(stop, path(GC, 'stopSequences', i)),
    );
    if (stops.length > 5)
      throw invalidRequest(
        `Invalid value at '${path(GC, 'stopSequences')}': at most 5 stop sequences, got ${stops.length}`,
        path(GC, 'stopSequences'),
      );
    if (stops.length > 0) request.stop = stops;
  }
  const extra: Record<string, unknown> = {};
  if (!isAbsent(read('presencePenalty')))
    extra.presence_penalty = readNumber(read('presencePenalty'), path(GC, 'presencePenalty'), { min: -2, max: 2 });
  if (!isAbsent(read('frequencyPenalty')))
    extra.frequency_penalty = readNumber(read('frequencyPenalty'), path(GC, 'frequencyPenalty'), { min: -2, max: 2 });
  if (Object.keys(extra).length > 0) request.backendExtra = extra;
  if (!isAbsent(read('candidateCount'))) {
    const count = readInteger(read('candidateCount'), path(GC, 'candidateCount'), { min: 1 });
    if (count > 1) throw unsupported(`only 1 candidate is supported, got ${count}`, path(GC, 'candidateCount'));
  }
  if (!isAbsent(read('responseModalities'))) {
    readArray(read('responseModalities'), path(GC, 'responseModalities')).forEach((modality, i) => {
      if (readString(modality, path(GC, 'responseModalities', i)) !== 'TEXT')
        throw unsupported(
          `only TEXT output is supported, got ${JSON.stringify(modality)}`,
          path(GC, 'responseModalities', i),
        );
    });
  }
  const format = decodeResponseFormat(config);
  if (format !== undefined) request.responseFormat = format;
  if (!isAbsent(read('thinkingConfig'))) request.reasoning = decodeThinking(read('thinkingConfig'), state);
}

/**
 * Decodes a `generateContent` / `streamGenerateContent` body; `target` gives the model (path
 * parameter `model`), the operation and `alt`. `countTokens: true` decodes the request inside a
 * `countTokens` body (no stream).
 * @throws IopError 400 naming the offending field.
 */
export function decodeGenerateContentRequest(
  body: unknown,
  target: RequestTarget | undefined,
  options: { countTokens?: boolean } = {},
): InferenceRequest {
  const root = readObject(body, 'body');
  const model = modelOf(target?.params.model ?? (typeof root.model === 'string' ? root.model : ''));
  const stream = options.countTokens !== true && (target?.endpoint.operation ?? '') === 'streamGenerateContent';
  const state: GeminiState = { sse: target?.query.get('alt') === 'sse', includeThoughts: false };
  const warnings: string[] = [];
  for (const key of Object.keys(root))
    if (!isKnown(key, KNOWN) && !isKnown(key, IGNORED)) warnings.push(`ignored unknown field ${key}`);
  if (!isAbsent(field(root, 'cachedContent')))
    throw unsupported('cached contents are not kept by this server; send the contents instead', 'cachedContent');

  const messages = decodeContents(root.contents);
  const system = field(root, 'systemInstruction');
  if (!isAbsent(system)) messages.unshift(decodeSystemInstruction(system));
  const request: InferenceRequest = { model, messages, stream, dialectState: state };
  if (stream) request.includeUsage = true;
  if (!isAbsent(root.tools)) {
    const tools = decodeTools(root.tools, warnings);
    if (tools.length > 0) request.tools = tools;
  }
  const toolConfig = field(root, 'toolConfig');
  if (!isAbsent(toolConfig)) {
    const decoded = decodeToolConfig(toolConfig, request.tools ?? []);
    if (decoded.toolChoice !== undefined && request.tools !== undefined) request.toolChoice = decoded.toolChoice;
    if (request.tools !== undefined) request.tools = decoded.tools;
  }
  const generation = field(root, 'generationConfig');
  if (!isAbsent(generation)) decodeGenerationConfig(generation, request, state);
  if (warnings.length > 0) request.warnings = warnings;
  return request;
}

/** The model name without Google's `models/` prefix. @throws IopError 400 for an empty one. */
export function modelOf(name: string): string {
  const model = name.startsWith('models/') ? name.slice('models/'.length) : name;
  if (model.length === 0) throw invalidRequest("Invalid value at 'model': the model name must not be empty", 'model');
  return model;
}

/**
 * A `countTokens` body: `{contents}` or `{generateContentRequest: {model, contents, …}}` (exclusive).
 * @throws IopError 400 for both or neither.
 */
export function decodeCountTokensRequest(body: unknown, target: RequestTarget): InferenceRequest {
  const root = readObject(body, 'body');
  const inner = field(root, 'generateContentRequest');
  if (!isAbsent(inner) && !isAbsent(root.contents))
    throw invalidRequest("Invalid value at 'contents': send contents or generateContentRequest, not both", 'contents');
  return decodeGenerateContentRequest(
    isAbsent(inner) ? { contents: root.contents } : readObject(inner, 'generateContentRequest'),
    target,
    {
      countTokens: true,
    },
  );
}
