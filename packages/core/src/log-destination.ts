/**
 * Where iop's pino loggers write: stdout, in batches. Lines logged during one turn of the event
 * loop are joined and written with one synchronous `write(2)` when the turn ends (`setImmediate`),
 * on process exit, or at once past 64 KiB. Under load many requests complete in one turn, so the
 * edge's request line and the agent's run line cost a string append instead of a system call each
 * (a write per line was ~13 % of the agent's busy time at 64 concurrent runs).
 *
 * Why not pino's asynchronous mode (sonic-boom `sync: false`): when the reader of stdout goes away
 * (EPIPE: a closed pipe) its pending buffer kept the process from exiting on SIGTERM; these
 * synchronous writes fail fast. Once stdout is gone, further lines are dropped instead of failing
 * the process. A pipe whose reader is slow (EAGAIN) is waited for, as pino's synchronous default
 * does, so no line is lost.
 */
import { writeSync } from 'node:fs';
import type { DestinationStream } from 'pino';

/** Past this many buffered UTF-16 units the batch is written at once. */
const FLUSH_AT = 1 << 16;
/** Wait between retries of a full pipe, ms. */
const EAGAIN_WAIT_MS = 1;

const waitCell = new Int32Array(new SharedArrayBuffer(4));

/** One batched writer per file descriptor; exported for tests. */
export class BatchedFdDestination implements DestinationStream {
  private buffer = '';
  private scheduled = false;
  private gone = false;
  private readonly flushLater = () => {
    this.scheduled = false;
    this.flush();
  };

  constructor(private readonly fd: number) {}

  write(line: string): boolean {
    if (this.gone) return true;
    this.buffer += line;
    if (this.buffer.length >= FLUSH_AT) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushLater).unref();
    }
    return true;
  }

  /**
   * Writes every buffered line now (synchronously), then calls `done` (pino's `logger.flush(cb)`).
   * Never throws: a closed descriptor drops the lines.
   */
  flush(done?: (error?: Error) => void): void {
    this.writeBuffered();
    done?.();
  }

  private writeBuffered(): void {
    if (this.buffer.length === 0 || this.gone) return;
    let bytes = Buffer.from(this.buffer, 'utf8');
    this.buffer = '';
    while (bytes.length > 0) {
      try {
        const written = writeSync(this.fd, bytes);
        bytes = bytes.subarray(written);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          Atomics.wait(waitCell, 0, 0, EAGAIN_WAIT_MS);
          continue;
        }
        this.gone = true; // EPIPE, EBADF: the reader is gone
        return;
      }
    }
  }
}

let stdout: BatchedFdDestination | undefined;

/** The process's one batched stdout destination (flushed on exit). */
export function stdoutDestination(): DestinationStream {
  if (stdout === undefined) {
    const destination = new BatchedFdDestination(1);
    process.once('exit', () => destination.flush());
    stdout = destination;
  }
  return stdout;
}

/**
 * Prints the process's readiness line, `{"event":"ready",…fields}`, on stdout whatever the log
 * level or format: the one signal scripts and tests wait for (never a log message's wording). It
 * goes through the same batched destination as the JSON log lines, so it comes after every line
 * logged before it.
 */
export function printReadiness(fields: Record<string, unknown>): void {
  stdoutDestination().write(`${JSON.stringify({ event: 'ready', ...fields })}\n`);
}
