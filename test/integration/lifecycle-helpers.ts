/**
 * Helpers of the lifecycle tests: a streamed chat request read as it arrives, and admin API calls.
 */
import type { AgentView } from '../../apps/edge/src/admin/agent-view';
import { API_KEY } from './harness';

export const ADMIN_KEY = 'iop-admin-key-test-000001';

export interface OpenStream {
  status: number;
  agent: string | null;
  /** Resolves with the whole body once the stream ends (or rejects when the connection breaks). */
  body: Promise<string>;
}

/** Starts a streamed chat completion and resolves once the response headers arrived. */
export async function openStream(baseURL: string, model = 'sim-model', key = API_KEY): Promise<OpenStream> {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'tell me a story' }] }),
  });
  return { status: response.status, agent: response.headers.get('x-iop-agent-id'), body: response.text() };
}

/** Content deltas of an OpenAI Chat SSE body, and whether it ended with [DONE] and no error. */
export function readChatStream(body: string): { deltas: number; done: boolean; error: unknown } {
  let deltas = 0;
  let done = false;
  let error: unknown;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = line.slice(6);
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const parsed = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; error?: unknown };
    if (parsed.error !== undefined) error = parsed.error;
    if ((parsed.choices?.[0]?.delta?.content ?? '') !== '') deltas++;
  }
  return { deltas, done, error };
}

export async function ask(baseURL: string, key = API_KEY): Promise<{ status: number; agent: string | null }> {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-model', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.arrayBuffer();
  return { status: response.status, agent: response.headers.get('x-iop-agent-id') };
}

/** An admin API call; `key` null sends no Authorization header. */
export async function admin(url: string, method: 'GET' | 'POST', path: string, key: string | null = ADMIN_KEY): Promise<{ status: number; body: { data: AgentView[] } }> {
  const response = await fetch(`${url}${path}`, { method, headers: key === null ? {} : { authorization: `Bearer ${key}` } });
  return { status: response.status, body: (await response.json()) as { data: AgentView[] } };
}
