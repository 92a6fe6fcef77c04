/**
 * Google's Gemini API on the edge, with the official `@google/genai` SDK (2.x), translated to the
 * OpenAI Chat backend (the sim behind a real agent) and back: generateContent,
 * generateContentStream (text, a function-call round trip) and the stream gate's checks on them. countTokens,
 * models.list/get, the key's places and Google's error envelope: gemini-errors.test.ts.
 */
import {
  ApiError,
  FunctionCallingConfigMode,
  type Content,
  type GenerateContentResponse,
  type GoogleGenAI,
} from '@google/genai';
import { API_KEY, simRequests, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { geminiCall, startGeminiStack } from './gemini-stack';

let sim: SimHandle;
let edge: EdgeHandle;
let ai: GoogleGenAI;

beforeAll(async () => {
  ({ sim, edge, ai } = await startGeminiStack());
});

afterAll(stopAll);

const call = (path: string, init?: Parameters<typeof geminiCall>[2]) => geminiCall(edge, path, init);

const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

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
