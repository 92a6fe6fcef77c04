/** iop-bench's report names the errors it received, not only their classes and counts. */
import { buildReport, formatReport } from '../../src/bench-report';
import type { RequestResult } from '../../src/request';

const ok: RequestResult = { ok: true, status: 200, latencyMs: 10, ttftMs: 5, itlMs: [1], outputTokens: 2 };
const fail = (status: number, errorClass: string, errorMessage: string): RequestResult => ({
  ok: false,
  status,
  errorClass,
  errorMessage,
  latencyMs: 3,
  ttftMs: undefined,
  itlMs: [],
  outputTokens: 0,
});

it('lists the error messages by frequency and prints them under the error counts', () => {
  const report = buildReport(
    [
      ok,
      fail(429, 'http_4xx', 'the queue of `house` is full'),
      fail(429, 'http_4xx', 'the queue of `house` is full'),
      fail(0, 'connection', 'connect ECONNREFUSED 127.0.0.1:1 (ECONNREFUSED)'),
    ],
    1000,
  );
  expect(report.errorMessages).toEqual([
    { message: '429: the queue of `house` is full', count: 2 },
    { message: 'connection: connect ECONNREFUSED 127.0.0.1:1 (ECONNREFUSED)', count: 1 },
  ]);
  const text = formatReport(report);
  expect(text).toContain('errors  http_4xx 2, connection 1');
  expect(text).toContain('  2 × 429: the queue of `house` is full\n  1 × connection: connect ECONNREFUSED');
});
