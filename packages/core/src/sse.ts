/**
 * Server-Sent Events: the one reader and the one writer.
 *
 * Reading is eventsource-parser's (WHATWG HTML §9.2 event stream interpretation: LF, CR and CRLF
 * line ends, fields split across reads, comments, multi-line `data`). Writing frames one event as
 * `event: <name>\n` (optional) + `data: <json>\n\n`.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export type { EventSourceMessage };

/** One parsed SSE event: `event` is undefined when the frame had no `event:` line. */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * Incremental SSE reader. Feed it decoded text as it arrives (any split); it calls `onEvent` once
 * per complete event, in order. `flush()` at end of input drops an unterminated trailing event,
 * as the spec says.
 */
export class SseReader {
  private readonly parser;
  private readonly decoder = new TextDecoder();

  constructor(onEvent: (event: SseEvent) => void) {
    this.parser = createParser({
      onEvent: (message: EventSourceMessage) => onEvent({ event: message.event, data: message.data }),
    });
  }

  /** Feeds raw bytes; multi-byte UTF-8 sequences split across chunks are joined correctly. */
  pushBytes(chunk: Uint8Array): void {
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
  }

  pushText(text: string): void {
    this.parser.feed(text);
  }

  /** End of input. */
  flush(): void {
    const rest = this.decoder.decode();
    if (rest.length > 0) this.parser.feed(rest);
    this.parser.reset({ consume: false });
  }
}

/** Frames one SSE event carrying a JSON payload. */
export function sseFrame(data: string, event?: string): string {
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}

/** Frames a JSON value as one SSE event (`JSON.stringify` never emits raw newlines, so one `data:` line suffices). */
export function sseJson(value: unknown, event?: string): string {
  return sseFrame(JSON.stringify(value), event);
}

/** The OpenAI Chat stream terminator. */
export const SSE_DONE = 'data: [DONE]\n\n';
