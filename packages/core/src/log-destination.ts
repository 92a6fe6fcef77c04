/**
 * Where iop's pino loggers write: stdout, synchronously (pino's default). Asynchronous writes were
 * measured as slightly cheaper, but when the reader of stdout goes away (EPIPE: a closed pipe)
 * their pending buffer kept the process from exiting on SIGTERM; synchronous writes fail fast.
 * Once stdout is gone, further log lines are dropped instead of failing the process.
 */
import { destination, type DestinationStream } from 'pino';

export function stdoutDestination(): DestinationStream {
  const stream = destination({ dest: 1, sync: true });
  stream.on('error', () => {
    Object.assign(stream, { write: () => true });
  });
  return stream;
}
