import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

/** A pino logger whose JSON lines the test can read. */
export function captureLogs(level = 'info'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level }, stream), lines };
}
