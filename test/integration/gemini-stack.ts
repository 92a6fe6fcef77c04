/**
 * The stack the Gemini API tests run against: the sim behind a real agent and a real edge, and the official
 * `@google/genai` SDK (2.x) pointed at the edge.
 */
import { GoogleGenAI } from '@google/genai';
import { API_KEY, startAgent, startEdge, startSim, type EdgeHandle, type SimHandle } from './harness';

/** The models the agent serves: the sim's model, and its variants with faults, reasoning and tool calls. */
export const MODELS = [
  'sim-model',
  'sim-model@reasoning=6',
  'sim-model@tool-calls=2',
  'sim-model@fault=cut',
  'sim-model@fault=429',
  'sim-model@invalid-tool-args=1',
];

/** A started stack: the sim, the edge, and an SDK client with the demo key. */
export interface GeminiStack {
  sim: SimHandle;
  edge: EdgeHandle;
  ai: GoogleGenAI;
}

/** Starts the sim, the edge and an agent serving `MODELS` (stop them with the harness's `stopAll`). */
export async function startGeminiStack(): Promise<GeminiStack> {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--max-model-len', '32768']);
  const edge = await startEdge();
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-gemini', backendUrl: sim.url, models: MODELS });
  return { sim, edge, ai: geminiClient(edge, API_KEY) };
}

/**
 * The SDK pointed at the edge. `fetch` given explicitly: without it the SDK looks for undici's
 * global dispatcher on `globalThis`, which Node sets on its own global, not on jest's sandbox.
 */
export function geminiClient(edge: EdgeHandle, apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: edge.url, fetch: (input, init) => fetch(input, init) } });
}

/** A `fetch` of the edge's Gemini path; `init.headers` are added to JSON's content type. */
export async function geminiCall(
  edge: EdgeHandle,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${edge.url}${path}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}
