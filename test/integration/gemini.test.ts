/**
 * Google's Gemini API on the edge, with the official `@google/genai` SDK (2.x), translated to the
 * OpenAI Chat backend (the sim behind a real agent) and back: generateContent,
 * generateContentStream (text, a function-call round trip), countTokens, models.list/get, the key
 * in `x-goog-api-key` and in `?key=`, and Google's error envelope with Google's statuses.
 */
import {
  ApiError,
  FunctionCallingConfigMode,
  GoogleGenAI,
  type Content,
  type GenerateContentResponse,
} from '@google/genai';
import {
  API_KEY,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let ai: GoogleGenAI;

const MODELS = [
  'sim-model',
  'sim-model@reasoning=6',
  'sim-model@tool-calls=2',
  'sim-model@fault=cut',
  'sim-model@fault=429',
  'sim-model@invalid-tool-args=1',
];

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--max-model-len', '32768']);
  edge = await startEdge();
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-gemini', backendUrl: sim.url, models: MODELS });
  ai = client(API_KEY);
});

/**
 * The SDK pointed at the edge. `fetch` given explicitly: without it the SDK looks for undici's
 * global dispatcher on `globalThis`, which Node sets on its own global, not on jest's sandbox.
 */
function client(apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: edge.url, fetch: (input, init) => fetch(input, init) } });
}

afterAll(stopAll);

const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A `fetch` of the edge's Gemini path; `init.headers` are added to JSON's content type. */
async function call(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${edge.url}${path}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

describe('generateContent', () => {
  it('answers with one candidate, STOP, usage and the model asked for', async () => {
    const response = await ai.models.generateContent({
      model: 'sim-model',
      contents: 'Hello there',
      config: { maxOutputTokens: 64 },
    });
    expect(response.candidates).toHaveLength(1);
    expect(response.candidates![0]!.finishReason).toBe('STOP');
    expect(response.candidates![0]!.content!.role).toBe('model');
    expect(response.text!.length).toBeGreaterThan(0);
    expect(response.modelVersion).toBe('sim-model');
    expect(response.responseId).toMatch(/^resp_/);
    const usage = response.usageMetadata!;
    expect(usage.candidatesTokenCount).toBe(10);
    expect(usage.promptTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
  });

  it('maxOutputTokens cuts the answer with MAX_TOKENS', async () => {
    const response = await ai.models.generateContent({
      model: 'sim-model',
      contents: 'Hello there',
      config: { maxOutputTokens: 4 },
    });
    expect(response.candidates![0]!.finishReason).toBe('MAX_TOKENS');
    expect(response.usageMetadata!.candidatesTokenCount).toBe(4);
  });

  it('sends thoughts as thought parts with includeThoughts, before the answer', async () => {
    const response = await ai.models.generateContent({
      model: 'sim-model@reasoning=6',
      contents: 'Think first',
      config: { maxOutputTokens: 64, thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } },
    });
    const parts = response.candidates![0]!.content!.parts!;
    expect(parts[0]!.thought).toBe(true);
    expect(parts.at(-1)!.thought).toBeUndefined();
    expect(response.text!.length).toBeGreaterThan(0);
    // The sim reports no reasoning_tokens: thoughts are counted in candidatesTokenCount then (usage.test.ts has the
    // split).
    const usage = response.usageMetadata!;
    expect(usage.totalTokenCount).toBe(
      usage.promptTokenCount! + usage.candidatesTokenCount! + (usage.thoughtsTokenCount ?? 0),
    );
  });

  it('leaves thoughts out without includeThoughts', async () => {
    const response = await ai.models.generateContent({
      model: 'sim-model@reasoning=6',
      contents: 'Think first',
      config: { maxOutputTokens: 64 },
    });
    expect(response.candidates![0]!.content!.parts!.every((part) => part.thought === undefined)).toBe(true);
  });

  it('sends an inlineData image to the backend as a data: URI image part', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const response = await ai.models.generateContent({
      model: 'sim-model',
      contents: [
        { role: 'user', parts: [{ text: 'What is this?' }, { inlineData: { mimeType: 'image/png', data: png } }] },
      ],
    });
    expect(response.candidates![0]!.finishReason).toBe('STOP');
    const sent = (await simRequests(sim)).at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages.at(-1)!.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
    ]);
  });

  it('takes the key from ?key= as Google’s curl samples send it', async () => {
    const { status, text } = await call(`/v1beta/models/sim-model:generateContent?key=${API_KEY}`, {
      body: { contents: [{ parts: [{ text: 'hi' }] }] },
    });
    expect(status).toBe(200);
    expect((JSON.parse(text) as { candidates: unknown[] }).candidates).toHaveLength(1);
  });
});

describe('generateContentStream', () => {
  it('streams text chunks that end with a finishReason chunk carrying the usage', async () => {
    const stream = await ai.models.generateContentStream({
      model: 'sim-model',
      contents: 'Hello there',
      config: { maxOutputTokens: 64 },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    const last = chunks.at(-1)!;
    expect(last.candidates![0]!.finishReason).toBe('STOP');
    expect(last.usageMetadata!.candidatesTokenCount).toBe(10);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.candidates![0]!.finishReason).toBeUndefined();
    expect(new Set(chunks.map((chunk) => chunk.responseId)).size).toBe(1);
    expect(chunks.map((chunk) => chunk.text ?? '').join('').length).toBeGreaterThan(0);
  });

  it('round-trips function calls: whole calls in the stream, then functionResponse parts, then the answer', async () => {
    const contents: Content[] = [{ role: 'user', parts: [{ text: 'Weather in Paris and Rome?' }] }];
    const stream = await ai.models.generateContentStream({
      model: 'sim-model@tool-calls=2',
      contents,
      config: {
        tools: [{ functionDeclarations: [weather] }],
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } },
      },
    });
    const calls = [];
    const modelParts = [];
    let finish: string | undefined;
    for await (const chunk of stream) {
      calls.push(...(chunk.functionCalls ?? []));
      modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    expect(finish).toBe('STOP');
    expect(calls).toHaveLength(2);
    for (const fc of calls) {
      expect(fc.name).toBe('get_weather');
      expect(typeof fc.args!.city).toBe('string');
      expect(fc.id).toMatch(/\S/);
    }
    contents.push({ role: 'model', parts: modelParts });
    // Gemini CLI's way: ids rewritten, results in one user content followed by text.
    contents.push({
      role: 'user',
      parts: [
        ...calls.map((fc) => ({
          functionResponse: {
            id: `get_weather__${fc.id}`,
            name: fc.name!,
            response: { output: '18 degrees and sunny' },
          },
        })),
        { text: 'Summarize.' },
      ],
    });
    const answer = await ai.models.generateContentStream({
      model: 'sim-model',
      contents,
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    let text = '';
    let last;
    for await (const chunk of answer) {
      text += chunk.text ?? '';
      last = chunk;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(last!.candidates![0]!.finishReason).toBe('STOP');
  });

  it('without alt=sse answers one JSON array of the same chunks', async () => {
    const { status, type, text } = await call('/v1beta/models/sim-model:streamGenerateContent', {
      headers: { 'x-goog-api-key': API_KEY },
      body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    });
    expect(status).toBe(200);
    expect(type).toMatch(/^application\/json/);
    const chunks = JSON.parse(text) as Array<{ candidates: Array<{ finishReason?: string }> }>;
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
  });

  it('a stream cut by the backend ends with an error the SDK raises, never a made-up STOP', async () => {
    const stream = await ai.models.generateContentStream({ model: 'sim-model@fault=cut', contents: 'Hello there' });
    const finishes: string[] = [];
    const failure = await (async () => {
      try {
        for await (const chunk of stream)
          if (chunk.candidates?.[0]?.finishReason) finishes.push(chunk.candidates[0].finishReason);
        return undefined;
      } catch (error) {
        return error;
      }
    })();
    expect(finishes).toEqual([]);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).status).toBeGreaterThanOrEqual(500);
  });
});

describe('the stream gate', () => {
  it('structured output: responseJsonSchema gives JSON that fits the schema', async () => {
    const response = await ai.models.generateContent({
      model: 'sim-model',
      contents: 'A person',
      config: {
        maxOutputTokens: 200,
        responseMimeType: 'application/json',
        responseJsonSchema: {
          type: 'object',
          properties: { name: { type: 'string' }, age: { type: 'integer' } },
          required: ['name', 'age'],
          additionalProperties: false,
        },
      },
    });
    const person = JSON.parse(response.text!) as { name: unknown; age: unknown };
    expect(typeof person.name).toBe('string');
    expect(Number.isInteger(person.age)).toBe(true);
  });

  it('tool calls are validated: a model whose every call is invalid never reaches the client as a call', async () => {
    const stream = await ai.models
      .generateContentStream({
        model: 'sim-model@invalid-tool-args=1',
        contents: 'Weather in Paris?',
        config: {
          tools: [{ functionDeclarations: [weather] }],
          toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY } },
        },
      })
      .catch((error: unknown) => error);
    const calls: unknown[] = [];
    let failure: unknown = stream instanceof Error ? stream : undefined;
    if (failure === undefined) {
      try {
        for await (const chunk of stream as AsyncGenerator<GenerateContentResponse>)
          calls.push(...(chunk.functionCalls ?? []));
      } catch (error) {
        failure = error;
      }
    }
    expect(calls).toEqual([]);
    expect(failure).toBeInstanceOf(ApiError);
    expect((failure as ApiError).status).toBeGreaterThanOrEqual(500);
  });
});

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
