/**
 * Google's Gemini API on the edge (the sim behind a real agent), with the official `@google/genai` SDK (2.x):
 * countTokens, models.list/get, the key in `x-goog-api-key` and in `?key=`, and Google's error envelope with Google's
 * statuses.
 */
import { ApiError, type GoogleGenAI } from '@google/genai';
import { API_KEY, stopAll, type EdgeHandle } from './harness';
import { MODELS, geminiCall, geminiClient, startGeminiStack } from './gemini-stack';

let edge: EdgeHandle;
let ai: GoogleGenAI;

beforeAll(async () => {
  ({ edge, ai } = await startGeminiStack());
});

afterAll(stopAll);

const client = (apiKey: string): GoogleGenAI => geminiClient(edge, apiKey);
const call = (path: string, init?: Parameters<typeof geminiCall>[2]) => geminiCall(edge, path, init);

describe('countTokens and models', () => {
  it('countTokens answers totalTokens for the contents', async () => {
    const short = await ai.models.countTokens({ model: 'sim-model', contents: 'hi' });
    const long = await ai.models.countTokens({ model: 'sim-model', contents: 'hi '.repeat(200) });
    expect(short.totalTokens).toBeGreaterThan(0);
    expect(long.totalTokens).toBeGreaterThan(short.totalTokens!);
  });

  it('models.list pages through every served model with the models/ prefix; models.get finds one', async () => {
    const names: string[] = [];
    const pager = await ai.models.list({ config: { pageSize: 2 } });
    for await (const model of pager) names.push(model.name!);
    expect(names).toEqual(MODELS.map((id) => `models/${id}`));
    const one = await ai.models.get({ model: 'sim-model' });
    expect(one.name).toBe('models/sim-model');
    const openai = (await (
      await fetch(`${edge.url}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).json()) as {
      data: Array<{ id: string; context_length: number | null }>;
    };
    expect(one.inputTokenLimit).toBe(
      openai.data.find((model) => model.id === 'sim-model')!.context_length ?? undefined,
    );
    expect(one.supportedActions).toContain('generateContent');
  });
});

describe('errors in Google’s envelope', () => {
  const envelope = (text: string) =>
    (JSON.parse(text) as { error: { code: number; status: string; message: string } }).error;

  it('a bad key is 401 UNAUTHENTICATED through the SDK and with ?key=', async () => {
    const bad = client('not-a-key');
    const failure = await bad.models
      .generateContent({ model: 'sim-model', contents: 'hi' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).status).toBe(401);
    const { status, text } = await call('/v1beta/models/sim-model:generateContent?key=wrong', {
      body: { contents: [{ parts: [{ text: 'hi' }] }] },
    });
    expect(status).toBe(401);
    expect(envelope(text)).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
    const missing = await call('/v1beta/models/sim-model:generateContent', {
      headers: { 'x-goog-api-key': '' },
      body: { contents: [] },
    });
    expect(missing.status).toBe(401);
    expect(envelope(missing.text).message).toContain('x-goog-api-key');
  });

  it('bad input is 400 INVALID_ARGUMENT naming the field', async () => {
    const empty = await call('/v1beta/models/sim-model:generateContent', {
      headers: { 'x-goog-api-key': API_KEY },
      body: { contents: [] },
    });
    expect(empty.status).toBe(400);
    expect(envelope(empty.text)).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(envelope(empty.text).message).toContain('contents');
    const malformed = await fetch(`${edge.url}/v1beta/models/sim-model:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'x-goog-api-key': API_KEY, 'content-type': 'application/json' },
      body: '{"contents": [',
    });
    expect(malformed.status).toBe(400);
    expect(envelope(await malformed.text())).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    const failure = await ai.models
      .generateContent({ model: 'sim-model', contents: 'hi', config: { temperature: 5 } })
      .catch((error: unknown) => error);
    expect((failure as ApiError).status).toBe(400);
    expect((failure as ApiError).message).toContain('generationConfig.temperature');
    const two = await ai.models
      .generateContent({ model: 'sim-model', contents: 'hi', config: { candidateCount: 2 } })
      .catch((error: unknown) => error);
    expect((two as ApiError).status).toBe(400);
    expect((two as ApiError).message).toContain('candidateCount');
  });

  it('an unknown model is 404 NOT_FOUND; a backend 429 is 429 RESOURCE_EXHAUSTED', async () => {
    const unknown = await ai.models
      .generateContent({ model: 'no-such-model', contents: 'hi' })
      .catch((error: unknown) => error);
    expect((unknown as ApiError).status).toBe(404);
    expect((unknown as ApiError).message).toContain('NOT_FOUND');
    const get = await ai.models.get({ model: 'no-such-model' }).catch((error: unknown) => error);
    expect((get as ApiError).status).toBe(404);
    const limited = await call('/v1beta/models/sim-model@fault=429:generateContent', {
      headers: { 'x-goog-api-key': API_KEY },
      body: { contents: [{ parts: [{ text: 'hi' }] }] },
    });
    expect(limited.status).toBe(429);
    expect(envelope(limited.text)).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
  });

  it('another method on a Gemini path is 405 with Allow, an unknown path 404, in Google’s envelope', async () => {
    const response = await fetch(`${edge.url}/v1beta/models`, {
      method: 'DELETE',
      headers: { 'x-goog-api-key': API_KEY },
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(envelope(await response.text())).toMatchObject({ code: 405, status: 'UNIMPLEMENTED' });
    const unknown = await call('/v1beta/files', { method: 'GET', headers: { 'x-goog-api-key': API_KEY } });
    expect(unknown.status).toBe(404);
    expect(envelope(unknown.text)).toMatchObject({ code: 404, status: 'NOT_FOUND' });
  });
});
