/**
 * Sends one request and times it: time to response headers, TTFT (first generated token on a
 * stream; the whole body for non-stream), inter-token latencies, end-to-end latency, output
 * tokens, and the error class when it fails. Times in ms.
 */
import { request as httpRequest, type Dispatcher } from 'undici';
import { SseReader } from '@iop/core';
import { DIALECTS, type BenchDialect, type ToolCallResult } from './dialects.js';

export interface RequestSpec {
  dialect: BenchDialect;
  model: string;
  prompt: string;
  maxTokens: number;
  stream: boolean;
  apiKey?: string;
  /** Extra body fields (e.g. `tools`, `tool_choice`), merged over the dialect's body. */
  body?: Record<string, unknown>;
  /** Extra request headers (e.g. `x-iop-gate`). */
  headers?: Record<string, string>;
  /**
   * Keep the streamed answer's text in `RequestResult.text` (Chat Completions streams; multi-turn workloads send it
   * back).
   */
  collectText?: boolean;
}

export interface RequestResult {
  ok: boolean;
  /** HTTP status, or 0 when the connection failed. */
  status: number;
  /** `http_4xx`, `http_5xx`, `connection`, `stream_error`, or undefined on success. */
  errorClass?: string;
  /**
   * The error's message as received (the error body's `message`, the in-band error event's, or the connection error),
   * at most 200 characters.
   */
  errorMessage?: string;
  latencyMs: number;
  ttftMs: number | undefined;
  /** Gaps between consecutive tokens of a stream. */
  itlMs: number[];
  outputTokens: number;
  /** The provider that served it, from the `x-iop-agent-id` response header when present. */
  agent?: string;
  /** Tool calls of the answer, for dialects that collect them (`DialectSpec.collectToolCalls`). */
  toolCalls?: ToolCallResult[];
  /** The answer's text, with `RequestSpec.collectText`. */
  text?: string;
}

export async function sendRequest(dispatcher: Dispatcher, origin: string, spec: RequestSpec): Promise<RequestResult> {
  const dialect = DIALECTS[spec.dialect];
  const headers: Record<string, string> = { 'content-type': 'application/json', ...spec.headers };
  if (spec.apiKey !== undefined) {
    headers.authorization = `Bearer ${spec.apiKey}`;
    headers['x-api-key'] = spec.apiKey;
    headers['anthropic-version'] = '2023-06-01';
  }
  const body = dialect.body(spec.model, spec.prompt, spec.maxTokens, spec.stream);
  if (spec.body !== undefined) Object.assign(body, spec.body);
  const started = performance.now();
  const result: RequestResult = { ok: false, status: 0, latencyMs: 0, ttftMs: undefined, itlMs: [], outputTokens: 0 };
  try {
    const response = await httpRequest(`${origin}${dialect.path}`, {
      dispatcher,
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    result.status = response.statusCode;
    const agent = response.headers['x-iop-agent-id'];
    if (typeof agent === 'string') result.agent = agent;
    if (response.statusCode >= 400) {
      result.errorMessage = messageOf(await response.body.text().catch(() => ''));
      result.errorClass = response.statusCode >= 500 ? 'http_5xx' : 'http_4xx';
      return result;
    }
    if (!spec.stream) {
      const answer = (await response.body.json()) as Record<string, unknown>;
      result.ttftMs = performance.now() - started;
      result.outputTokens = dialect.outputTokens(answer) ?? 0;
      if (dialect.collectToolCalls !== undefined) dialect.collectToolCalls(answer, (result.toolCalls = []));
      result.ok = true;
      return result;
    }
    let last = 0;
    let tokens = 0;
    let reported: number | undefined;
    let streamError = false;
    const toolCalls: ToolCallResult[] | undefined =
      dialect.collectToolCalls === undefined ? undefined : (result.toolCalls = []);
    const reader = new SseReader((event) => {
      if (event.data === '[DONE]') return;
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(event.data) as Record<string, unknown>;
      } catch {
        streamError = true;
        result.errorMessage ??= 'malformed SSE event (not JSON)';
        return;
      }
      if (event.event === 'error' || 'error' in data || event.event === 'response.failed') {
        streamError = true;
        result.errorMessage ??= messageOf(event.data);
      }
      if (dialect.isToken(event.event, data)) {
        if (spec.collectText === true)
          result.text =
            (result.text ?? '') +
            ((data.choices as Array<{ delta?: { content?: string } }> | undefined)?.[0]?.delta?.content ?? '');
        const now = performance.now();
        if (tokens === 0) result.ttftMs = now - started;
        else result.itlMs.push(now - last);
        last = now;
        tokens++;
      }
      reported = dialect.outputTokens(data) ?? reported;
      if (toolCalls !== undefined) dialect.collectToolCalls!(data, toolCalls);
    });
    for await (const chunk of response.body) reader.pushBytes(chunk as Uint8Array);
    reader.flush();
    result.outputTokens = reported ?? tokens;
    result.ok = !streamError;
    if (streamError) result.errorClass = 'stream_error';
    return result;
  } catch (error) {
    result.errorClass = 'connection';
    result.errorMessage = clip(
      error instanceof Error
        ? `${error.message}${(error as { code?: string }).code === undefined ? '' : ` (${(error as { code?: string }).code})`}`
        : String(error),
    );
    return result;
  } finally {
    result.latencyMs = performance.now() - started;
  }
}

const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/**
 * The `message` of an error body in any dialect (`{error:{message}}`, `{type:"error",error:{message}}`,
 * `response.failed`), else the text itself.
 */
function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as {
      error?: { message?: unknown };
      response?: { error?: { message?: unknown } };
      message?: unknown;
    };
    const message = body.error?.message ?? body.response?.error?.message ?? body.message;
    if (typeof message === 'string') return clip(message);
  } catch {
    // not JSON: the text as it came
  }
  return clip(text.trim() || '(empty body)');
}
