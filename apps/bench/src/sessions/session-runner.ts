/**
 * Runs multi-turn sessions (session-workload.ts) against an edge: every session at once, each turn
 * a streamed Chat Completions request sent after the previous turn's answer and the turn's think
 * time, the answer appended to the conversation. Each request is one sample: TTFT, inter-token
 * latencies, output tokens, the agent that served it (`x-iop-agent-id`), and its prompt.
 */
import { Agent } from 'undici';
import { sleep } from '@iop/core';
import { sendRequest, type RequestResult } from '../request.js';
import type { ChatMessage, Session } from './session-workload.js';

export interface SessionSample {
  session: string;
  project: string;
  turn: number;
  /** When it was sent, ms since the run started. */
  sentAtMs: number;
  ok: boolean;
  status: number;
  errorClass?: string;
  ttftMs?: number;
  itlMs: number[];
  latencyMs: number;
  outputTokens: number;
  agent?: string;
  /** The request's messages (kept for the ideal hit rate; dropped from the samples file). */
  messages: ChatMessage[];
}

export interface RunOptions {
  origin: string;
  apiKey?: string;
  model: string;
  sessions: readonly Session[];
  /** Called after every finished request with the samples so far. */
  onSample?: (sample: SessionSample) => void;
  /** Stop starting turns after this time, ms (turns in flight finish). */
  durationMs?: number;
}

/** Runs every session to its end (or the duration); resolves with the samples in completion order. */
export async function runSessions(options: RunOptions): Promise<{ samples: SessionSample[]; wallMs: number }> {
  const dispatcher = new Agent({ connections: Math.max(16, options.sessions.length * 2), keepAliveTimeout: 60_000 });
  const samples: SessionSample[] = [];
  const started = performance.now();
  const expired = () => options.durationMs !== undefined && performance.now() - started > options.durationMs;
  try {
    await Promise.all(
      options.sessions.map(async (session) => {
        let conversation: ChatMessage[] = [];
        for (const [turn, step] of session.turns.entries()) {
          if (step.delayMs > 0) await sleep(step.delayMs);
          if (expired()) return;
          conversation = step.replace ? step.messages : [...conversation, ...step.messages];
          const sentAtMs = performance.now() - started;
          const result: RequestResult = await sendRequest(dispatcher, options.origin, {
            dialect: 'chat',
            model: step.model ?? options.model,
            prompt: '',
            maxTokens: step.maxTokens,
            stream: true,
            collectText: true,
            body: { messages: conversation },
            ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
          });
          const sample: SessionSample = {
            session: session.id,
            project: session.project,
            turn,
            sentAtMs,
            ok: result.ok,
            status: result.status,
            ...(result.errorClass === undefined ? {} : { errorClass: result.errorClass }),
            ...(result.ttftMs === undefined ? {} : { ttftMs: result.ttftMs }),
            itlMs: result.itlMs,
            latencyMs: result.latencyMs,
            outputTokens: result.outputTokens,
            ...(result.agent === undefined ? {} : { agent: result.agent }),
            messages: conversation,
          };
          samples.push(sample);
          options.onSample?.(sample);
          if (!result.ok) return; // a failed turn ends its session: the conversation cannot go on
          if (!step.replace) conversation = [...conversation, { role: 'assistant', content: result.text ?? '' }];
        }
      }),
    );
  } finally {
    await dispatcher.close();
  }
  return { samples, wallMs: performance.now() - started };
}
