/**
 * Multi-turn workloads for the pool load test: what a team of coding agents sends.
 *
 * - Synthetic (`syntheticSessions`): `projects` shared system prompts, each carrying its tool set
 *   as text (`systemTokens` words, 8–20 k by default: Claude Code and Codex send prompts of that
 *   size), and `sessions` sessions spread over the projects; each session has `turns` user turns
 *   (`userTokens` words each) whose conversation grows with every answer, and a think time between
 *   turns. Words are drawn from a seeded generator, so a run is repeatable. One word is one token
 *   of the simulator's tokenizer (apps/sim/src/tokenizer.ts) and roughly one to two of a real one.
 * - Replay (`replaySessions`): a JSONL file of chat requests, one per line:
 *   `{"messages": [...], "session_id"?: "…", "timestamp"?: <ms or ISO 8601>, "max_tokens"?: n, "model"?: "…"}`.
 *   Lines of one session are sent in order, each after the previous one's answer, at their
 *   timestamps' spacing when given; lines without a session id are sessions of one turn. The
 *   messages are sent as they are (the file holds the whole conversation of each request).
 */
import { readFileSync } from 'node:fs';
import { seededRandom } from '@iop/core';

export interface ChatMessage {
  role: string;
  content: unknown;
}

/** One turn as the runner sends it: the new messages (synthetic) or the whole conversation (replay). */
export interface SessionTurn {
  /** Messages to append to the conversation (synthetic: one user message), or the whole request (replay: `replace`). */
  messages: ChatMessage[];
  replace: boolean;
  maxTokens: number;
  /** Wait before sending this turn, ms (think time, or the replay's spacing). */
  delayMs: number;
  model?: string;
}

export interface Session {
  id: string;
  /** The project (shared prefix) it belongs to, or its own id. */
  project: string;
  turns: SessionTurn[];
}

export interface SyntheticOptions {
  sessions: number;
  projects: number;
  turns: number;
  /** Words of each project's system prompt (min, max). */
  systemTokens: [number, number];
  userTokens: [number, number];
  maxTokens: [number, number];
  /** Think time between turns, ms (min, max). */
  thinkMs: [number, number];
  /** Sessions start spread over this time, ms. */
  rampMs: number;
  seed: number;
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qu', 'ix', 'on', 'el', 'ur', 'ba'];

function words(random: () => number, count: number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const length = 1 + Math.floor(random() * 3);
    let word = '';
    for (let s = 0; s < length; s++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    out.push(word);
  }
  return out.join(' ');
}

const between = (random: () => number, [min, max]: [number, number]) => min + Math.floor(random() * (max - min + 1));

/** The synthetic coding-agent workload (module doc). */
export function syntheticSessions(options: SyntheticOptions): Session[] {
  const random = seededRandom(options.seed);
  const systems = Array.from(
    { length: options.projects },
    (_, p) => `project ${p} system prompt and tools: ${words(random, between(random, options.systemTokens))}`,
  );
  return Array.from({ length: options.sessions }, (_, index) => {
    const project = index % options.projects;
    const turns: SessionTurn[] = [];
    for (let turn = 0; turn < options.turns; turn++) {
      const user: ChatMessage = {
        role: 'user',
        content: `session ${index} turn ${turn}: ${words(random, between(random, options.userTokens))}`,
      };
      const start =
        turn === 0
          ? Math.floor((options.rampMs * index) / Math.max(1, options.sessions))
          : between(random, options.thinkMs);
      turns.push({
        messages: turn === 0 ? [{ role: 'system', content: systems[project]! }, user] : [user],
        replace: false,
        maxTokens: between(random, options.maxTokens),
        delayMs: start,
      });
    }
    return { id: `s${index}`, project: `p${project}`, turns };
  });
}

interface ReplayLine {
  messages?: unknown;
  session_id?: unknown;
  timestamp?: unknown;
  max_tokens?: unknown;
  model?: unknown;
}

function timeOf(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

/**
 * Sessions of a JSONL file (module doc).
 * @throws Error naming the line of the first invalid request (not JSON, no `messages` array).
 */
export function replaySessions(path: string, defaultMaxTokens: number): Session[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const sessions = new Map<string, { session: Session; lastAt: number | undefined }>();
  let firstAt: number | undefined;
  lines.forEach((text, index) => {
    if (text.trim() === '') return;
    let line: ReplayLine;
    try {
      line = JSON.parse(text) as ReplayLine;
    } catch (error) {
      throw new Error(`${path}:${index + 1}: not JSON (${(error as Error).message})`, { cause: error });
    }
    if (!Array.isArray(line.messages) || line.messages.length === 0)
      throw new Error(`${path}:${index + 1}: "messages" must be a non-empty array`);
    const id = typeof line.session_id === 'string' && line.session_id !== '' ? line.session_id : `line-${index + 1}`;
    const at = timeOf(line.timestamp);
    firstAt ??= at;
    let entry = sessions.get(id);
    if (entry === undefined) {
      entry = { session: { id, project: id, turns: [] }, lastAt: undefined };
      sessions.set(id, entry);
    }
    const delayMs = at === undefined ? 0 : Math.max(0, at - (entry.lastAt ?? firstAt ?? at));
    entry.lastAt = at ?? entry.lastAt;
    entry.session.turns.push({
      messages: line.messages as ChatMessage[],
      replace: true,
      maxTokens: typeof line.max_tokens === 'number' && line.max_tokens > 0 ? line.max_tokens : defaultMaxTokens,
      delayMs,
      ...(typeof line.model === 'string' ? { model: line.model } : {}),
    });
  });
  return [...sessions.values()].map((entry) => entry.session);
}
