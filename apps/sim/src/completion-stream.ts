/**
 * Writes a legacy completion as vLLM streams it (docs/protocols.md "Legacy completions"):
 * `data: {"object":"text_completion", choices:[{index, text, logprobs, finish_reason}]}` per
 * token (the text itself in `text`, no delta, no role; with `echo` the prompt first), the
 * choice's last token carrying its `finish_reason`, choices one after another; a `choices: []`
 * usage chunk when asked; then `data: [DONE]`. TTFT before the first chunk, ITL between chunks.
 *
 * Mid-stream faults after `faultAfter` tokens: `cut` (socket destroyed), `malformed` (a broken
 * JSON chunk), `error-chunk` (an `{"error":…}` chunk), `stall` (nothing more), `no-done` (the
 * stream ends without finish or `[DONE]`), `finish-no-done` (finish reasons, no `[DONE]`).
 */
import { resetSocket, type Exchange } from './exchange.js';
import type { MidStreamFault } from './chat-stream.js';
import { vllmError } from './sim-error.js';

export interface TextChoice {
  index: number;
  /** The prompt's text when `echo` is set, else "". */
  echo: string;
  /** Generated tokens. */
  pieces: string[];
  finishReason: 'stop' | 'length';
  stopReason: string | null;
  logprobs: {
    tokens: string[];
    token_logprobs: Array<number | null>;
    top_logprobs: Array<Record<string, number> | null>;
    text_offset: number[];
  } | null;
}

export interface TextCompletion {
  id: string;
  created: number;
  model: string;
  choices: TextChoice[];
  /** Sent as the last chunk when set. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | undefined;
}

export interface StreamTiming {
  ttftMs: number;
  itlMs: number;
  fault: MidStreamFault | undefined;
  faultAfter: number;
}

/** One event per chunk, in order: the wire text of each, and whether it is a generated token. */
function events(completion: TextCompletion): Array<{ data: string; token: boolean; finish: boolean }> {
  const head = { id: completion.id, object: 'text_completion', created: completion.created, model: completion.model };
  const usageNull = completion.usage === undefined ? {} : { usage: null };
  const out: Array<{ data: string; token: boolean; finish: boolean }> = [];
  const chunk = (choice: object) => JSON.stringify({ ...head, choices: [choice], ...usageNull });
  for (const choice of completion.choices) {
    const logprobAt = (position: number) =>
      choice.logprobs === null
        ? null
        : {
            tokens: [choice.logprobs.tokens[position]],
            token_logprobs: [choice.logprobs.token_logprobs[position]],
            top_logprobs: [choice.logprobs.top_logprobs[position]],
            text_offset: [choice.logprobs.text_offset[position]],
          };
    let position = 0;
    if (choice.echo !== '') {
      // The echoed prompt goes as one chunk; its logprobs, if any, with it.
      const echoed = choice.logprobs === null ? 0 : choice.logprobs.tokens.length - choice.pieces.length;
      const logprobs =
        choice.logprobs === null
          ? null
          : {
              tokens: choice.logprobs.tokens.slice(0, echoed),
              token_logprobs: choice.logprobs.token_logprobs.slice(0, echoed),
              top_logprobs: choice.logprobs.top_logprobs.slice(0, echoed),
              text_offset: choice.logprobs.text_offset.slice(0, echoed),
            };
      out.push({
        data: chunk({ index: choice.index, text: choice.echo, logprobs, finish_reason: null }),
        token: false,
        finish: false,
      });
      position = echoed;
    }
    choice.pieces.forEach((piece, k) => {
      const last = k === choice.pieces.length - 1;
      const finish = last
        ? { finish_reason: choice.finishReason, stop_reason: choice.stopReason }
        : { finish_reason: null };
      out.push({
        data: chunk({ index: choice.index, text: piece, logprobs: logprobAt(position + k), ...finish }),
        token: true,
        finish: last,
      });
    });
    if (choice.pieces.length === 0)
      out.push({
        data: chunk({ index: choice.index, text: '', logprobs: null, finish_reason: choice.finishReason }),
        token: false,
        finish: true,
      });
  }
  if (completion.usage !== undefined)
    out.push({ data: JSON.stringify({ ...head, choices: [], usage: completion.usage }), token: false, finish: false });
  return out;
}

export function streamTextCompletion(exchange: Exchange, completion: TextCompletion, timing: StreamTiming): void {
  const { res } = exchange;
  const queue = events(completion);
  exchange.record.status = 200;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let tokens = 0;
  let timer: NodeJS.Timeout | undefined;
  exchange.onClose = () => clearTimeout(timer);
  const end = (done: boolean) => {
    if (done) res.write('data: [DONE]\n\n');
    exchange.closedByServer = true;
    res.end();
  };
  const next = (): void => {
    if (res.destroyed) return;
    const event = queue.shift();
    if (event === undefined) {
      end(timing.fault !== 'finish-no-done');
      return;
    }
    if (timing.fault !== undefined && timing.fault !== 'finish-no-done' && event.token && tokens >= timing.faultAfter) {
      switch (timing.fault) {
        case 'cut':
          resetSocket(exchange);
          return;
        case 'malformed':
          res.write('data: {"id": "broken", "choices": [\n\n');
          end(true);
          return;
        case 'error-chunk':
          res.write(`data: ${JSON.stringify(vllmError(500, 'simulated fault: error during generation'))}\n\n`);
          end(true);
          return;
        case 'stall':
          return;
        case 'no-done':
          end(false);
          return;
      }
    }
    res.write(`data: ${event.data}\n\n`);
    if (event.token) tokens++;
    timer = setTimeout(next, event.token ? timing.itlMs : 0);
  };
  timer = setTimeout(next, timing.ttftMs);
}
