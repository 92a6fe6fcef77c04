import fc from 'fast-check';
import { IopError } from '@iop/core';
import { backendToolName } from '../../src/openai-responses/tools-decode.js';
import { decodeResponsesRequest } from '../../src/openai-responses/request-decode.js';
import { responsesStateOf } from '../../src/openai-responses/request-state.js';

/**
 * The shape Codex CLI sends (docs/protocols.md "Codex CLI"): developer prompt in input, ids everywhere,
 * namespace/custom/hosted tools.
 */
const CODEX_BODY = {
  model: 'qwen3-coder',
  stream: true,
  store: false,
  include: ['reasoning.encrypted_content'],
  prompt_cache_key: 'conv-7f3a',
  parallel_tool_calls: true,
  tool_choice: 'auto',
  reasoning: { effort: 'medium', summary: 'auto' },
  text: { verbosity: 'low' },
  client_metadata: { originator: 'codex_cli_rs' },
  tools: [
    {
      type: 'function',
      name: 'shell',
      description: 'Run a command',
      strict: false,
      parameters: {
        type: 'object',
        properties: { command: { type: 'array', items: { type: 'string' } } },
        required: ['command'],
      },
    },
    {
      type: 'custom',
      name: 'apply_patch',
      description: 'Apply a patch',
      format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch' },
    },
    {
      type: 'namespace',
      name: 'mcp__github',
      description: 'GitHub tools',
      tools: [{ type: 'function', name: 'get_issue', description: 'Read an issue', parameters: { type: 'object' } }],
    },
    { type: 'web_search' },
    { type: 'tool_search' },
  ],
  input: [
    { type: 'message', id: 'msg_dev', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
    {
      type: 'message',
      id: 'msg_u1',
      role: 'user',
      content: [
        { type: 'input_text', text: 'Fix the bug' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBOR', detail: 'low' },
      ],
    },
    {
      type: 'reasoning',
      id: 'rs_1',
      summary: [{ type: 'summary_text', text: 'Look at the file.' }],
      encrypted_content: 'opaque',
    },
    {
      type: 'function_call',
      id: 'fc_1',
      call_id: 'call_1',
      name: 'shell',
      arguments: '{"command":["cat","a.ts"]}',
      status: 'completed',
    },
    {
      type: 'function_call',
      id: 'fc_2',
      call_id: 'call_2',
      name: 'get_issue',
      namespace: 'mcp__github',
      arguments: '{}',
      status: 'completed',
    },
    { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'const x = 1;' },
    {
      type: 'function_call_output',
      id: 'fco_2',
      call_id: 'call_2',
      output: [{ type: 'input_text', text: 'issue 42' }],
    },
    {
      type: 'custom_tool_call',
      id: 'ctc_1',
      call_id: 'call_3',
      name: 'apply_patch',
      input: '*** Begin Patch\n*** End Patch',
      status: 'completed',
    },
    { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'call_3', output: 'Done!' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Patched.', annotations: [] }] },
    { role: 'user', content: 'thanks' },
  ],
};

function badRequest(body: unknown): IopError {
  try {
    decodeResponsesRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    return error as IopError;
  }
  throw new Error('expected a 400');
}

describe('decodeResponsesRequest', () => {
  it('decodes what Codex CLI sends into hub messages and tools, dropping hosted tools with warnings', () => {
    const request = decodeResponsesRequest(CODEX_BODY);
    expect(request.stream).toBe(true);
    expect(request.promptCacheKey).toBe('conv-7f3a');
    expect(request.reasoning).toEqual({ enabled: true, effort: 'medium' });
    expect(request.toolChoice).toEqual({ type: 'auto' });
    expect(request.parallelToolCalls).toBe(true);
    expect(request.messages).toEqual([
      { role: 'developer', content: [{ type: 'text', text: 'You are Codex.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Fix the bug' },
          { type: 'image', url: 'data:image/png;base64,iVBOR', detail: 'low' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Look at the file.', signature: 'opaque' },
          { type: 'tool-call', id: 'call_1', name: 'shell', arguments: '{"command":["cat","a.ts"]}' },
          {
            type: 'tool-call',
            id: 'call_2',
            name: 'mcp__github__get_issue',
            arguments: '{}',
            origin: { kind: 'namespace', namespace: 'mcp__github', name: 'get_issue' },
          },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', content: [{ type: 'text', text: 'const x = 1;' }] },
      { role: 'tool', toolCallId: 'call_2', content: [{ type: 'text', text: 'issue 42' }] },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            id: 'call_3',
            name: 'apply_patch',
            arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }),
            origin: { kind: 'custom' },
          },
        ],
      },
      { role: 'tool', toolCallId: 'call_3', content: [{ type: 'text', text: 'Done!' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Patched.' }] },
      { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
    ]);
    expect(request.tools?.map((tool) => [tool.name, tool.origin])).toEqual([
      ['shell', { kind: 'function' }],
      ['apply_patch', { kind: 'custom' }],
      ['mcp__github__get_issue', { kind: 'namespace', namespace: 'mcp__github', name: 'get_issue' }],
    ]);
    expect(request.tools?.[1]?.parameters).toMatchObject({
      type: 'object',
      properties: { input: { type: 'string' } },
      required: ['input'],
    });
    expect(JSON.stringify(request.tools?.[1]?.parameters)).toContain('start: begin_patch hunk+ end_patch');
    expect(request.warnings).toEqual(
      expect.arrayContaining([expect.stringContaining('web_search'), expect.stringContaining('tool_search')]),
    );

    const state = responsesStateOf(request);
    expect(state.store).toBe(false);
    expect(state.include).toEqual(['reasoning.encrypted_content']);
    expect(state.text.verbosity).toBe('low');
    expect(state.inputItems.map((item) => item.id).slice(0, 9)).toEqual([
      'msg_dev',
      'msg_u1',
      'rs_1',
      'fc_1',
      'fc_2',
      'fco_1',
      'fco_2',
      'ctc_1',
      'ctco_1',
    ]);
    expect(state.inputItems[9]!.id).toMatch(/^msg_/);
    expect(state.inputItems[10]).toMatchObject({ type: 'message', role: 'user', content: 'thanks' });
  });

  it('puts instructions first, takes a string input as one user message, and turns reasoning off unless an effort is given', () => {
    const request = decodeResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      input: 'Hi',
      reasoning: { summary: 'auto' },
    });
    expect(request.messages).toEqual([
      { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
    ]);
    expect(request.reasoning).toEqual({ enabled: false });
    expect(responsesStateOf(request).store).toBe(true);
    expect(decodeResponsesRequest({ model: 'm', input: 'x', reasoning: { effort: 'none' } }).reasoning).toEqual({
      enabled: false,
    });
    expect(decodeResponsesRequest({ model: 'm', input: 'x' }).reasoning).toEqual({ enabled: false });
  });

  it('maps text.format, max_output_tokens, sampling and user fields', () => {
    const request = decodeResponsesRequest({
      model: 'm',
      input: 'x',
      max_output_tokens: 100,
      temperature: 0.5,
      top_p: 0.8,
      user: 'u1',
      safety_identifier: 's1',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
    });
    expect(request).toMatchObject({
      maxOutputTokens: 100,
      temperature: 0.5,
      topP: 0.8,
      user: 's1',
      responseFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true },
    });
    expect(
      decodeResponsesRequest({ model: 'm', input: 'x', text: { format: { type: 'json_object' } } }).responseFormat,
    ).toEqual({ type: 'json_object' });
  });

  it('decodes tool_choice: named function, custom, allowed_tools filtering', () => {
    const tools = CODEX_BODY.tools;
    expect(
      decodeResponsesRequest({ model: 'm', input: 'x', tools, tool_choice: { type: 'function', name: 'shell' } })
        .toolChoice,
    ).toEqual({
      type: 'tool',
      name: 'shell',
    });
    expect(
      decodeResponsesRequest({ model: 'm', input: 'x', tools, tool_choice: { type: 'custom', name: 'apply_patch' } })
        .toolChoice,
    ).toEqual({
      type: 'tool',
      name: 'apply_patch',
    });
    const allowed = decodeResponsesRequest({
      model: 'm',
      input: 'x',
      tools,
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'shell' }] },
    });
    expect(allowed.toolChoice).toEqual({ type: 'required' });
    expect(allowed.tools?.map((tool) => tool.name)).toEqual(['shell']);
    expect(badRequest({ model: 'm', input: 'x', tools, tool_choice: { type: 'function', name: 'nope' } }).param).toBe(
      'tool_choice.name',
    );
    expect(badRequest({ model: 'm', input: 'x', tools, tool_choice: { type: 'web_search' } })).toMatchObject({
      code: 'unsupported_field',
      param: 'tool_choice',
    });
  });

  it('rejects fields whose loss would change the output, naming them', () => {
    expect(badRequest({ model: 'm', input: 'x', stop: ['\n'] })).toMatchObject({
      code: 'unsupported_field',
      param: 'stop',
      status: 400,
    });
    expect(badRequest({ model: 'm', input: 'x', n: 2 }).param).toBe('n');
    expect(badRequest({ model: 'm', input: 'x', background: true }).param).toBe('background');
    expect(badRequest({ model: 'm', input: 'x', conversation: 'conv_1' }).param).toBe('conversation');
    expect(badRequest({ input: 'x' }).param).toBe('model');
    expect(badRequest({ model: 'm' }).param).toBe('input');
    expect(badRequest({ model: 'm', input: [{ role: 'robot', content: 'x' }] }).param).toBe('input[0].role');
    expect(badRequest({ model: 'm', input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }).param).toBe(
      'input[0].call_id',
    );
    expect(
      badRequest({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] })
        .param,
    ).toBe('input[0].content[0].file_id');
    expect(badRequest({ model: 'm', input: 'x', tools: [{ type: 'function', function: { name: 'f' } }] }).param).toBe(
      'tools[0].name',
    );
    expect(badRequest({ model: 'm', input: 'x', text: { format: { type: 'json_schema', name: 'a' } } }).param).toBe(
      'text.format.schema',
    );
    expect(badRequest({ model: 'm', input: 'x', temperature: 3 }).param).toBe('temperature');
    expect(badRequest({ model: 'm', input: 'x', reasoning: { effort: 'extreme' } }).param).toBe('reasoning.effort');
  });

  it('drops sampling-only and unknown fields and unrunnable history items with a warning', () => {
    const request = decodeResponsesRequest({
      model: 'm',
      input: [
        { type: 'web_search_call', id: 'ws_1', status: 'completed' },
        { role: 'user', content: 'x' },
      ],
      seed: 7,
      frequency_penalty: 1,
    });
    expect(request.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'x' }] }]);
    expect(request.warnings).toEqual([
      expect.stringContaining('web_search_call'),
      'dropped seed: not supported on this server',
      'dropped frequency_penalty: not supported on this server',
    ]);
  });

  it('accepts a follow-up with previous_response_id and no input', () => {
    const request = decodeResponsesRequest({ model: 'm', previous_response_id: 'resp_1' });
    expect(request.messages).toEqual([]);
    expect(responsesStateOf(request).previousResponseId).toBe('resp_1');
  });
});

describe('backendToolName', () => {
  it('joins namespace and name, and keeps any pair a valid, deterministic OpenAI function name', () => {
    expect(backendToolName('mcp__github', 'get_issue')).toBe('mcp__github__get_issue');
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 80 }),
        fc.string({ minLength: 1, maxLength: 80 }),
        (namespace, name) => {
          const flat = backendToolName(namespace, name);
          expect(flat).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
          expect(backendToolName(namespace, name)).toBe(flat);
        },
      ),
    );
    const long = 'x'.repeat(60);
    expect(backendToolName(long, 'a')).not.toBe(backendToolName(long, 'b'));
  });
});
