/**
 * Gemini request bodies → the hub request: a recorded Gemini CLI-shaped turn (fixture), the URL's
 * model and stream mode, generationConfig, structured output, thinking, function calling modes,
 * snake_case field names, and 400s naming the field.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DialectEndpoint, InferenceRequest, RequestTarget } from '@iop/core';
import { IopError } from '@iop/core';
import { decodeCountTokensRequest, decodeGenerateContentRequest } from '../../src/gemini/request-decode';
import { toJsonSchema } from '../../src/gemini/tools-decode';
import { gemini } from '../../src/gemini/dialect';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(__dirname, '../../src/gemini/__fixtures__', `${name}.json`), 'utf8'));

function target(operation: string, model = 'gemini-2.5-pro', query = ''): RequestTarget {
  const endpoint = gemini.endpoints.find((candidate) => candidate.operation === operation) as DialectEndpoint;
  return {
    endpoint,
    path: `/v1beta/models/${model}:${operation}`,
    params: { model },
    query: new URLSearchParams(query),
  };
}

const decode = (body: unknown, operation = 'generateContent', query = ''): InferenceRequest =>
  decodeGenerateContentRequest(body, target(operation, 'gemini-2.5-pro', query));
const simple = (extra: Record<string, unknown> = {}) => ({
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  ...extra,
});

function failure(run: () => unknown): IopError {
  try {
    run();
  } catch (error) {
    if (error instanceof IopError) return error;
    throw error;
  }
  throw new Error('expected an IopError');
}

describe('decodeGenerateContentRequest', () => {
  it('decodes a Gemini CLI turn: system, thoughts dropped, calls paired with results by id and by name, results before text', () => {
    const request = decode(fixture('gemini-cli-turn'), 'streamGenerateContent', 'alt=sse');
    expect(request.model).toBe('gemini-2.5-pro');
    expect(request.stream).toBe(true);
    expect(request.includeUsage).toBe(true);
    expect(request.dialectState).toEqual({ sse: true, includeThoughts: true });
    expect(request.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'You are a CLI agent.\nBe brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'List the files, then read README.md' }] },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            id: 'list_directory__call_a1',
            name: 'list_directory',
            arguments: '{"path":"."}',
            origin: { kind: 'function' },
          },
          {
            type: 'tool-call',
            id: 'call_1_2',
            name: 'read_file',
            arguments: '{"absolute_path":"/repo/README.md"}',
            origin: { kind: 'function' },
          },
        ],
      },
      { role: 'tool', toolCallId: 'list_directory__call_a1', content: [{ type: 'text', text: 'README.md\nsrc' }] },
      { role: 'tool', toolCallId: 'call_1_2', content: [{ type: 'text', text: '# Title' }] },
      { role: 'user', content: [{ type: 'text', text: 'Now summarize.' }] },
    ]);
    expect(request.tools).toEqual([
      {
        name: 'list_directory',
        description: 'Lists a directory',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        origin: { kind: 'function' },
      },
      {
        name: 'read_file',
        description: 'Reads a file',
        parameters: {
          type: 'object',
          properties: {
            absolute_path: { type: ['string', 'null'] },
            limit: { type: 'integer', minimum: 1 },
            tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
          },
          required: ['absolute_path'],
        },
        origin: { kind: 'function' },
      },
    ]);
    expect(request.toolChoice).toEqual({ type: 'auto' });
    expect(request.warnings).toEqual(['dropped tool googleSearch: a Google built-in tool cannot run on this backend']);
    expect(request).toMatchObject({
      temperature: 1,
      topP: 0.95,
      topK: 64,
      maxOutputTokens: 8192,
      reasoning: { enabled: true, budgetTokens: 8192 },
    });
  });

  it('takes the stream mode from the operation and alt=sse', () => {
    expect(decode(simple()).stream).toBe(false);
    expect(decode(simple(), 'streamGenerateContent').dialectState).toEqual({ sse: false, includeThoughts: false });
    expect(decode(simple(), 'streamGenerateContent', 'alt=sse').dialectState).toEqual({
      sse: true,
      includeThoughts: false,
    });
  });

  it('reads snake_case field names as Google’s REST samples send them, without renaming user data', () => {
    const request = decode({
      system_instruction: { parts: [{ text: 'sys' }] },
      contents: [{ parts: [{ text: 'look' }, { inline_data: { mime_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
      generation_config: {
        max_output_tokens: 7,
        stop_sequences: ['END'],
        response_mime_type: 'application/json',
        response_json_schema: { type: 'object', properties: { snake_key: { type: 'string' } } },
      },
    });
    expect(request.messages[0]).toEqual({ role: 'system', content: [{ type: 'text', text: 'sys' }] });
    expect(request.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
      ],
    });
    expect(request.maxOutputTokens).toBe(7);
    expect(request.stop).toEqual(['END']);
    expect(request.responseFormat).toEqual({
      type: 'json_schema',
      name: 'response',
      schema: { type: 'object', properties: { snake_key: { type: 'string' } } },
      strict: true,
    });
  });

  it('maps structured output: JSON mode, responseSchema converted, text/x.enum refused', () => {
    expect(decode(simple({ generationConfig: { responseMimeType: 'application/json' } })).responseFormat).toEqual({
      type: 'json_object',
    });
    expect(
      decode(
        simple({
          generationConfig: {
            responseMimeType: 'application/json',
            responseSchema: { type: 'ARRAY', items: { type: 'STRING' } },
          },
        }),
      ).responseFormat,
    ).toEqual({
      type: 'json_schema',
      name: 'response',
      schema: { type: 'array', items: { type: 'string' } },
      strict: true,
    });
    expect(failure(() => decode(simple({ generationConfig: { responseMimeType: 'text/x.enum' } }))).param).toBe(
      'generationConfig.responseMimeType',
    );
    expect(failure(() => decode(simple({ generationConfig: { responseSchema: { type: 'STRING' } } }))).param).toBe(
      'generationConfig.responseMimeType',
    );
  });

  it('maps thinkingConfig: budget 0 off, a level as the effort, both at once a 400', () => {
    expect(decode(simple({ generationConfig: { thinkingConfig: { thinkingBudget: 0 } } })).reasoning).toEqual({
      enabled: false,
    });
    expect(decode(simple({ generationConfig: { thinkingConfig: { thinkingLevel: 'HIGH' } } })).reasoning).toEqual({
      enabled: true,
      effort: 'high',
    });
    expect(decode(simple({ generationConfig: { thinkingConfig: { thinkingBudget: -1 } } })).reasoning).toEqual({
      enabled: true,
    });
    expect(decode(simple()).reasoning).toBeUndefined();
    expect(
      failure(() =>
        decode(simple({ generationConfig: { thinkingConfig: { thinkingBudget: 10, thinkingLevel: 'LOW' } } })),
      ).param,
    ).toBe('generationConfig.thinkingConfig');
  });

  it('maps function calling modes and allowedFunctionNames', () => {
    const tools = [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }] }];
    const mode = (functionCallingConfig: Record<string, unknown>) =>
      decode(simple({ tools, toolConfig: { functionCallingConfig } }));
    expect(mode({ mode: 'NONE' }).toolChoice).toEqual({ type: 'none' });
    expect(mode({ mode: 'ANY' }).toolChoice).toEqual({ type: 'required' });
    expect(mode({ mode: 'VALIDATED' }).toolChoice).toEqual({ type: 'auto' });
    const one = mode({ mode: 'ANY', allowedFunctionNames: ['b'] });
    expect(one.toolChoice).toEqual({ type: 'tool', name: 'b' });
    expect(one.tools!.map((tool) => tool.name)).toEqual(['b']);
    expect(failure(() => mode({ mode: 'ANY', allowedFunctionNames: ['c'] })).param).toBe(
      'toolConfig.functionCallingConfig.allowedFunctionNames.0',
    );
    expect(failure(() => mode({ mode: 'SOMETIMES' })).param).toBe('toolConfig.functionCallingConfig.mode');
  });

  it('refuses what it cannot honour with a 400 naming the field', () => {
    const cases: Array<[unknown, string]> = [
      [{ contents: [] }, 'contents'],
      [simple({ generationConfig: { candidateCount: 2 } }), 'generationConfig.candidateCount'],
      [simple({ generationConfig: { temperature: 3 } }), 'generationConfig.temperature'],
      [simple({ generationConfig: { maxOutputTokens: 0 } }), 'generationConfig.maxOutputTokens'],
      [
        simple({ generationConfig: { stopSequences: ['1', '2', '3', '4', '5', '6'] } }),
        'generationConfig.stopSequences',
      ],
      [simple({ generationConfig: { responseModalities: ['IMAGE'] } }), 'generationConfig.responseModalities.0'],
      [simple({ cachedContent: 'cachedContents/abc' }), 'cachedContent'],
      [{ contents: [{ role: 'system', parts: [{ text: 'x' }] }] }, 'contents.0.role'],
      [
        { contents: [{ parts: [{ functionResponse: { name: 'f', response: {} } }] }] },
        'contents.0.parts.0.functionResponse',
      ],
      [
        { contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'not base64!' } }] }] },
        'contents.0.parts.0.inlineData.data',
      ],
      [
        {
          contents: [
            {
              parts: [
                {
                  fileData: {
                    fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/x',
                    mimeType: 'application/pdf',
                  },
                },
              ],
            },
          ],
        },
        'contents.0.parts.0.fileData.fileUri',
      ],
      [simple({ tools: [{ functionDeclarations: [{ name: 'has space' }] }] }), 'tools.0.functionDeclarations.0.name'],
    ];
    for (const [body, param] of cases) {
      const error = failure(() => decode(body));
      expect({ param: error.param, status: gemini.errorResponse(error, 'r').status }).toEqual({
        param,
        status: 400,
      });
      expect(error.message).toContain(param.split('.')[0]!);
    }
  });

  it('countTokens takes {contents} or {generateContentRequest}, not both', () => {
    const countTarget = target('countTokens');
    expect(decodeCountTokensRequest({ contents: [{ parts: [{ text: 'hi' }] }] }, countTarget).messages).toHaveLength(1);
    const inner = decodeCountTokensRequest(
      { generateContentRequest: { model: 'models/x', ...simple({ systemInstruction: { parts: [{ text: 's' }] } }) } },
      countTarget,
    );
    expect(inner.messages.map((message) => message.role)).toEqual(['system', 'user']);
    expect(inner.stream).toBe(false);
    expect(
      failure(() => decodeCountTokensRequest({ contents: [], generateContentRequest: simple() }, countTarget)).param,
    ).toBe('contents');
  });
});

describe('toJsonSchema', () => {
  it('lowercases types, turns nullable into a null type, parses int64 strings, keeps property names', () => {
    expect(
      toJsonSchema({
        type: 'OBJECT',
        nullable: true,
        properties: {
          Type: { type: 'STRING', enum: ['a'], example: 'a' },
          nullable: { type: 'NUMBER', nullable: true },
        },
        minProperties: '1',
        anyOf: [{ type: 'INTEGER' }],
      }),
    ).toEqual({
      type: ['object', 'null'],
      properties: { Type: { type: 'string', enum: ['a'] }, nullable: { type: ['number', 'null'] } },
      minProperties: 1,
      anyOf: [{ type: 'integer' }],
    });
  });
});
