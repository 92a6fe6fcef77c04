import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { BatchedFdDestination } from '../src/log-destination';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('BatchedFdDestination', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'iop-log-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the lines of one event-loop turn together at its end, in order and whole', async () => {
    const file = join(dir, 'out.log');
    const fd = openSync(file, 'w');
    const destination = new BatchedFdDestination(fd);
    const logger = pino({ base: undefined, timestamp: false }, destination);
    for (let i = 0; i < 100; i++) logger.info({ i, text: 'héllo ✓' }, 'run ended');
    expect(readFileSync(file, 'utf8')).toBe(''); // nothing written within the turn
    await turn();
    await turn();
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { i: number; text: string; msg: string });
    expect(lines.map((line) => line.i)).toEqual([...Array(100).keys()]);
    expect(lines[99]).toEqual({ level: 30, i: 99, text: 'héllo ✓', msg: 'run ended' });
    closeSync(fd);
  });

  it('writes at once past 64 KiB, and on flush() (pino logger.flush callback called)', async () => {
    const file = join(dir, 'big.log');
    const fd = openSync(file, 'w');
    const destination = new BatchedFdDestination(fd);
    destination.write(`${'x'.repeat(70_000)}\n`);
    expect(readFileSync(file, 'utf8').length).toBe(70_001);
    destination.write('tail\n');
    const done = jest.fn();
    pino({}, destination).flush(done);
    expect(done).toHaveBeenCalledTimes(1);
    expect(readFileSync(file, 'utf8').endsWith('tail\n')).toBe(true);
    closeSync(fd);
  });

  it('drops lines without throwing once the descriptor is unusable', async () => {
    const file = join(dir, 'read-only.log');
    closeSync(openSync(file, 'w'));
    const fd = openSync(file, 'r'); // writes fail (EBADF), as on a closed pipe (EPIPE)
    const destination = new BatchedFdDestination(fd);
    expect(destination.write('lost\n')).toBe(true);
    expect(() => destination.flush()).not.toThrow();
    expect(destination.write('also lost\n')).toBe(true);
    await turn();
    expect(readFileSync(file, 'utf8')).toBe('');
    closeSync(fd);
  });
});
