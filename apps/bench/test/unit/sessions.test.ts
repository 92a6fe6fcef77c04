import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { idealCache } from '../../src/sessions/ideal-cache.js';
import { formatTable, summarize, ttftCdfSvg } from '../../src/sessions/session-report.js';
import type { SessionSample } from '../../src/sessions/session-runner.js';
import { replaySessions, syntheticSessions } from '../../src/sessions/session-workload.js';

const OPTIONS = {
  sessions: 6,
  projects: 2,
  turns: 3,
  systemTokens: [400, 600] as [number, number],
  userTokens: [20, 40] as [number, number],
  maxTokens: [10, 20] as [number, number],
  thinkMs: [5, 10] as [number, number],
  rampMs: 60,
  seed: 7,
};

function sample(
  messages: SessionSample['messages'],
  sentAtMs: number,
  extra: Partial<SessionSample> = {},
): SessionSample {
  return {
    session: 's',
    project: 'p',
    turn: 0,
    sentAtMs,
    ok: true,
    status: 200,
    itlMs: [],
    latencyMs: 1,
    outputTokens: 1,
    messages,
    ...extra,
  };
}

describe('syntheticSessions', () => {
  it('gives every session of a project the same system prompt, its own turns, and is repeatable', () => {
    const sessions = syntheticSessions(OPTIONS);
    expect(sessions).toHaveLength(6);
    expect(syntheticSessions(OPTIONS)).toEqual(sessions);
    const system = (index: number) => sessions[index]!.turns[0]!.messages[0]!.content;
    expect(system(0)).toBe(system(2)); // projects p0: sessions 0, 2, 4
    expect(system(0)).not.toBe(system(1));
    const words = String(system(0)).split(' ').length;
    expect(words).toBeGreaterThanOrEqual(400);
    expect(words).toBeLessThanOrEqual(600 + 10);
    for (const session of sessions) {
      expect(session.turns).toHaveLength(3);
      expect(
        session.turns
          .slice(1)
          .every((turn) => turn.messages.length === 1 && turn.messages[0]!.role === 'user' && !turn.replace),
      ).toBe(true);
      expect(session.turns.slice(1).every((turn) => turn.delayMs >= 5 && turn.delayMs <= 10)).toBe(true);
    }
  });
});

describe('replaySessions', () => {
  it('groups lines by session id in order, spaced by their timestamps, and names a bad line', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iop-replay-'));
    const file = path.join(dir, 'requests.jsonl');
    const messages = [{ role: 'user', content: 'hi' }];
    writeFileSync(
      file,
      [
        JSON.stringify({ session_id: 'a', timestamp: 1000, messages, max_tokens: 50 }),
        JSON.stringify({ session_id: 'b', timestamp: '1970-01-01T00:00:01.500Z', messages }),
        '',
        JSON.stringify({
          session_id: 'a',
          timestamp: 4000,
          messages: [...messages, { role: 'assistant', content: 'yo' }],
        }),
        JSON.stringify({ messages }),
      ].join('\n'),
    );
    const sessions = replaySessions(file, 256);
    expect(sessions.map((session) => [session.id, session.turns.length])).toEqual([
      ['a', 2],
      ['b', 1],
      ['line-5', 1],
    ]);
    expect(sessions[0]!.turns.map((turn) => [turn.delayMs, turn.maxTokens, turn.replace])).toEqual([
      [0, 50, true],
      [3000, 256, true],
    ]);
    expect(sessions[1]!.turns[0]!.delayMs).toBe(500);
    writeFileSync(file, `${JSON.stringify({ messages })}\n{"messages": "no"}\n`);
    expect(() => replaySessions(file, 256)).toThrow(`${file}:2: "messages" must be a non-empty array`);
  });
});

describe('idealCache', () => {
  it('serves a prompt from an unbounded shared cache as far as it matches what was sent before, block by block', () => {
    const words = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`).join(' ');
    const system = { role: 'system', content: words('sys', 64) }; // 64 tokens: 4 blocks of 16
    const first = sample([system, { role: 'user', content: words('u', 20) }], 0);
    const second = sample([system, { role: 'user', content: words('v', 20) }], 1); // same 4 system blocks, then differs
    // Sent in the other order than listed: the ideal follows the send time.
    expect(idealCache([second, first])).toEqual({ queriedTokens: 168, hitTokens: 64 });
  });
});

describe('session report', () => {
  it('summarizes percentiles, throughput and hit shares per policy, and draws the CDF', async () => {
    const samples = Array.from({ length: 100 }, (_, i) =>
      sample([{ role: 'user', content: 'x' }], i, {
        ttftMs: i + 1,
        itlMs: [5],
        outputTokens: 10,
        agent: i % 2 === 0 ? 'a' : 'b',
      }),
    );
    samples.push(sample([{ role: 'user', content: 'x' }], 200, { ok: false, status: 503 }));
    const summary = summarize({
      policy: 'p2c',
      samples,
      wallMs: 10_000,
      ideal: { queriedTokens: 100, hitTokens: 90 },
      measured: { queriedTokens: 100, hitTokens: 80 },
      gpuTtft: { sumMs: 4_000, count: 100 },
    });
    expect(summary).toMatchObject({
      policy: 'p2c',
      requests: 101,
      errors: 1,
      outputTokensPerS: 100,
      cacheHitShare: 0.8,
      gpuTtftMeanMs: 40,
      idealHitShare: 0.9,
      perAgent: { a: 50, b: 50 },
    });
    expect(summary.ttftMs!.p50).toBeCloseTo(50, 0);
    expect(summary.ttftMs!.p99).toBeCloseTo(99, 0);
    expect(summary.itlP99Ms).toBeCloseTo(5, 1);
    expect(formatTable([summary])).toContain('| p2c | 101 | 1 | 50 |');
    const svg = await ttftCdfSvg(
      [{ policy: 'p2c', samples, wallMs: 10_000, ideal: { queriedTokens: 1, hitTokens: 0 } }],
      'TTFT',
    );
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('p2c');
  });
});
