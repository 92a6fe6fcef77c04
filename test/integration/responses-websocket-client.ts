/**
 * A Responses WebSocket client for the integration tests (the `ws` package, as Codex CLI's
 * protocol uses it): collects every server event, waits for a response's terminal event, and
 * reads a refused upgrade's HTTP status and body.
 */
import WebSocket from 'ws';
import { API_KEY, type EdgeHandle } from './harness';

export type ServerEvent = Record<string, unknown> & { type: string };

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);

export class SocketClient {
  readonly events: ServerEvent[] = [];
  private waiters: Array<() => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) throw new Error('the edge sent a binary message');
      this.events.push(JSON.parse(String(data)) as ServerEvent);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  static open(
    edge: Pick<EdgeHandle, 'url'>,
    key: string = API_KEY,
    headers: Record<string, string> = {},
  ): Promise<SocketClient> {
    const ws = new WebSocket(`${edge.url.replace(/^http/, 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${key}`, 'openai-beta': 'responses_websockets=2026-02-06', ...headers },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new SocketClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
  }

  /** The HTTP answer to an upgrade the edge refuses. */
  static refused(
    edge: Pick<EdgeHandle, 'url'>,
    key: string = API_KEY,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
    const ws = new WebSocket(`${edge.url.replace(/^http/, 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => reject(new Error('the upgrade was accepted')));
      ws.once('error', () => undefined);
      ws.once('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += String(chunk)));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(text) as Record<string, unknown>,
          }),
        );
      });
    });
  }

  send(event: Record<string, unknown> | string): void {
    this.ws.send(typeof event === 'string' ? event : JSON.stringify(event));
  }

  /** Waits until `count` events from index `from` on satisfy `done`, or `timeoutMs` passes. */
  async waitFor(done: (events: ServerEvent[]) => boolean, timeoutMs = 20_000): Promise<ServerEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.events)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; events so far: ${this.events.map((event) => event.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events;
  }

  /**
   * Sends a `response.create` and resolves with that response's events, up to its terminal event (or an `error` event).
   */
  async create(body: Record<string, unknown>, timeoutMs?: number): Promise<ServerEvent[]> {
    const from = this.events.length;
    this.send({ type: 'response.create', ...body });
    await this.waitFor((events) => events.slice(from).some((event) => TERMINAL.has(event.type)), timeoutMs);
    const events = this.events.slice(from);
    return events.slice(0, events.findIndex((event) => TERMINAL.has(event.type)) + 1);
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close(1000);
    return this.closed;
  }
}

/** The final Response of a response's events (its terminal event's `response`). */
export function finalResponse(
  events: ServerEvent[],
): Record<string, unknown> & { id: string; status: string; output: Array<Record<string, unknown>> } {
  const last = events.at(-1)!;
  if (last.type === 'error') throw new Error(`error event: ${JSON.stringify(last)}`);
  return last.response as ReturnType<typeof finalResponse>;
}

/** The text of a Response's message items. */
export function outputText(response: ReturnType<typeof finalResponse>): string {
  return response.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content as Array<{ text: string }>)
    .map((part) => part.text)
    .join('');
}
