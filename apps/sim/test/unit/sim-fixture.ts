/** Shared test setup: a sim on port 0, an OpenAI client pointed at it, raw HTTP helpers. */
import OpenAI from 'openai';
import { startSim, type SimOptions, type SimServer } from '../../src/index.js';
import type { RequestRecord } from '../../src/request-log.js';

export interface Fixture {
  sim: SimServer;
  client: OpenAI;
}

export async function startFixture(options: SimOptions = {}): Promise<Fixture> {
  const sim = await startSim({ port: 0, ...options });
  const client = new OpenAI({
    baseURL: `${sim.url}/v1`,
    apiKey: 'test-key',
    maxRetries: 0,
    timeout: 5_000,
    logLevel: 'off',
  });
  return { sim, client };
}

/** POSTs a JSON body and returns status, headers and the whole body text. */
export async function postRaw(
  sim: SimServer,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => frame.slice('data: '.length));
}

export async function getJson<T>(sim: SimServer, path: string): Promise<T> {
  const response = await fetch(`${sim.url}${path}`);
  return (await response.json()) as T;
}

export async function requests(sim: SimServer): Promise<RequestRecord[]> {
  return (await getJson<{ data: RequestRecord[] }>(sim, '/_sim/requests')).data;
}

/** Polls until `predicate` holds or `timeoutMs` passes; returns the elapsed ms. */
export async function waitFor(predicate: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (await predicate()) return Date.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

export const USER_MESSAGES = [{ role: 'user' as const, content: 'What is the weather in Paris today?' }];

export const WEATHER_TOOLS = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
          days: { type: 'integer', minimum: 1, maximum: 7 },
        },
        required: ['city', 'unit', 'days'],
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'get_time',
      parameters: {
        type: 'object',
        properties: { zone: { type: 'string' }, precise: { type: 'boolean' } },
        required: ['zone', 'precise'],
      },
    },
  },
];
