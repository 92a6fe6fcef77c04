import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import type { Span } from '@opentelemetry/api';
import { IopError } from '@iop/core';
import { anthropicDialect, chatDialect } from '../../../src/dialects';
import { EdgeMetrics } from '../../../src/metrics';
import type { EdgeContext } from '../../../src/edge-context';
import type { LedgerRow } from '../../../src/ledger/usage-ledger';
import { InFlightRequests } from '../../../src/telemetry/in-flight-requests';
import { ClientGone } from '../../../src/attempt/request-deadline';
import type { PoolPick } from '../../../src/pool/provider-pool';
import type { RunStream } from '../../../src/pool/run-stream';
import { RequestOutcome } from '../../../src/request/request-outcome';

const silent = { info: () => {}, warn: () => {}, debug: () => {}, error: () => {} };
const span = { isRecording: () => false } as unknown as Span;

/** An edge with a ledger and no key record (no limits apply), and a response that records its headers. */
function setup(dialect = chatDialect) {
  const rows: LedgerRow[] = [];
  const metrics = new EdgeMetrics();
  const recorded: Array<Parameters<EdgeMetrics['recordRequest']>[0]> = [];
  const recordRequest = metrics.recordRequest.bind(metrics);
  metrics.recordRequest = (observation) => {
    recorded.push(observation);
    recordRequest(observation);
  };
  const edge = {
    config: { requestDeadlineMs: 60_000, pricing: { models: { m: { input: 1_000_000, output: 0 } } } },
    metrics,
    requests: new InFlightRequests(),
    knownModel: (model: string) => model,
    state: { ledger: { record: (row: LedgerRow) => rows.push(row) } },
  } as unknown as EdgeContext;
  const headers = new Map<string, unknown>();
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    headersSent: false,
    writableFinished: false,
    locals: { requestId: 'req_1', log: silent, startedAt: performance.now(), identity: { keyId: 'open' } },
    setHeader: (name: string, value: unknown) => headers.set(name, value),
    getHeader: (name: string) => headers.get(name),
  }) as unknown as Response & EventEmitter;
  const req = { body: Buffer.alloc(40) } as unknown as Request;
  const outcome = new RequestOutcome(edge, dialect, req, res, span);
  return { outcome, rows, recorded, res, edge, headers };
}

function fakeRun(): RunStream & { reasons: string[] } {
  const reasons: string[] = [];
  let finished = false;
  return {
    runId: 'run_1',
    providerId: 'agent-a',
    frames: undefined as never,
    accepted: true,
    get isFinished() {
      return finished;
    },
    reasons,
    cancel(reason: string) {
      if (finished) return;
      finished = true;
      reasons.push(reason);
    },
  };
}

const pick = { model: 'served-m', provider: { id: 'agent-a', providerName: 'vllm' } } as unknown as PoolPick;

describe('RequestOutcome', () => {
  it('settles an answer once: one ledger row, one request observation, with the usage and serving provider', async () => {
    const { outcome, rows, recorded, headers } = setup();
    outcome.asked('m', true);
    outcome.answeredBy({ mode: 'passthrough' });
    outcome.counted('m', () => 10);
    await outcome.admit('m');
    const run = fakeRun();
    outcome.runs.started(run);
    outcome.onRun(run, pick);
    outcome.usage.record({ promptTokens: 3, completionTokens: 2, cachedTokens: 0, reasoningTokens: 0 });
    outcome.ended(undefined, run.runId);
    outcome.settle();
    outcome.settle();
    outcome.settle(new IopError('internal', 'late'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      requestedModel: 'm',
      servedModel: 'served-m',
      agentId: 'agent-a',
      status: 200,
      inputTokens: 3,
      outputTokens: 2,
      attempts: 1,
      costUsd: 3,
    });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      status: 200,
      servedModel: 'served-m',
      providerName: 'vllm',
      errorType: undefined,
      usage: { inputTokens: 3, outputTokens: 2 },
      response: { mode: 'passthrough', policy: 'none' },
    });
    expect(headers.get('x-iop-model')).toBe('served-m');
  });

  it('counts a stream that ended in band with the error status in the client dialect', () => {
    const { outcome, recorded, res } = setup(anthropicDialect);
    outcome.asked('m', true);
    outcome.ended(new IopError('no_capacity', 'no capacity'), 'run_1');
    outcome.settle();
    expect(res.statusCode).toBe(200);
    expect(recorded[0]).toMatchObject({ status: 529, errorType: 'no_capacity' });
  });

  it('writes the ledger row of a refused request with its status, and none for a failure before admission', async () => {
    const refused = setup();
    await refused.outcome.admit('m');
    refused.outcome.settle(new IopError('rate_limited', 'slow down'));
    expect(refused.rows).toMatchObject([{ status: 429, attempts: 0, inputTokens: 0 }]);
    expect(refused.recorded[0]).toMatchObject({ status: 429, errorType: 'rate_limited' });
    const invalid = setup();
    invalid.outcome.settle(new IopError('invalid_request', 'bad body'));
    expect(invalid.rows).toEqual([]);
    expect(invalid.recorded[0]).toMatchObject({ status: 400, errorType: 'invalid_request' });
  });

  it('cancels the running run when the client leaves, and bills the prompt estimate as a 499', async () => {
    const { outcome, rows, recorded, res, edge } = setup();
    outcome.asked('m', true);
    outcome.counted('m', () => 10);
    await outcome.admit('m');
    const run = fakeRun();
    outcome.runs.started(run);
    outcome.onRun(run, pick);
    res.emit('close');
    expect(run.reasons).toEqual(['client disconnected']);
    expect(edge.requests.size).toBe(0);
    const gone = new ClientGone();
    expect(outcome.clientLeft(gone)).toBe(true);
    outcome.settle(gone);
    expect(rows).toMatchObject([{ status: 499, inputTokens: 10, outputTokens: 0, tokensEstimated: true }]);
    expect(recorded).toMatchObject([{ status: 499, errorType: 'client_gone' }]);
  });
});
