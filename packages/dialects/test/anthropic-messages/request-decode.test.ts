/** The Messages request decoder: Claude Code's requests and the conversation (docs/protocols.md). */
import { decode, expectBadRequest, base } from './helpers.js';

describe('decodeRequest: a Claude Code request (docs/protocols.md "Claude Code")', () => {
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { file_path: { type: 'string', format: 'uri' }, limit: { type: 'integer', exclusiveMinimum: 0 } },
    required: ['file_path'],
    additionalProperties: false,
  };
  const body = {
    model: 'claude-sonnet-4-5',
    max_tokens: 32000,
    stream: true,
    thinking: { type: 'adaptive' },
    output_config: { effort: 'high' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    metadata: { user_id: 'user_abc_account_1_session_2' },
    system: [
      { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Be brief.' },
    ],
    tools: [{ name: 'Read', description: 'Reads a file', input_schema: schema, cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'read /a', cache_control: { type: 'ephemeral' } }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should read it.', signature: 'EqQBsig' },
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: '/a' } },
        ],
      },
      { role: 'system', content: 'Reminder: the file may be large.' },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01',
            content: 'line 1',
            is_error: true,
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ],
  };

  it('decodes into the hub request with instructions, history and tools in place', () => {
    expect(decode(body)).toEqual({
      model: 'claude-sonnet-4-5',
      stream: true,
      includeUsage: true,
      promptUsageAtStart: true,
      maxOutputTokens: 32000,
      reasoning: { enabled: true, effort: 'high' },
      user: 'user_abc_account_1_session_2',
      tools: [{ name: 'Read', description: 'Reads a file', parameters: schema }],
      warnings: ['ignored context_management: the backend keeps the full context'],
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'You are Claude Code.' },
            { type: 'text', text: 'Be brief.' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'read /a' }] },
        {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'I should read it.', signature: 'EqQBsig' },
            { type: 'text', text: 'Reading.' },
            { type: 'tool-call', id: 'toolu_01', name: 'Read', arguments: '{"file_path":"/a"}' },
          ],
        },
        { role: 'system', content: [{ type: 'text', text: 'Reminder: the file may be large.' }] },
        { role: 'tool', toolCallId: 'toolu_01', content: [{ type: 'text', text: 'line 1' }], isError: true },
      ],
    });
  });

  it('keeps the tool schema object itself (no copy, every 2020-12 keyword intact)', () => {
    expect(decode(body).tools![0]!.parameters).toBe(schema);
  });
});

describe('decodeRequest: messages', () => {
  it('puts several tool results first, in order, then one user message with the text (docs/protocols.md "Tool results")', () => {
    const request = decode({
      ...base,
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 't1', name: 'A', input: {} },
            { type: 'tool_use', id: 't2', name: 'B', input: { n: 2 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'r1' }] },
            { type: 'text', text: 'and then' },
            { type: 'tool_result', tool_use_id: 't2' },
            { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
          ],
        },
      ],
    });
    expect(request.messages.slice(2)).toEqual([
      { role: 'tool', toolCallId: 't1', content: [{ type: 'text', text: 'r1' }] },
      { role: 'tool', toolCallId: 't2', content: [] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'and then' },
          { type: 'image', url: 'https://x/y.png' },
        ],
      },
    ]);
  });

  it('merges consecutive same-role turns', () => {
    const request = decode({
      ...base,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: [{ type: 'text', text: 'b' }] },
        { role: 'assistant', content: 'c' },
        { role: 'assistant', content: 'd' },
      ],
    });
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'c' },
          { type: 'text', text: 'd' },
        ],
      },
    ]);
  });

  it('keeps an assistant prefill as the last message', () => {
    const request = decode({
      ...base,
      messages: [
        { role: 'user', content: 'json?' },
        { role: 'assistant', content: '{' },
      ],
    });
    expect(request.messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: '{' }] });
  });

  it('turns base64 images into data URIs, images inside tool results included', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    const request = decode({
      ...base,
      messages: [
        { role: 'user', content: [image] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 's', name: 'Shot', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 's', content: [{ type: 'text', text: 'ok' }, image] }],
        },
      ],
    });
    expect(request.messages[0]).toEqual({
      role: 'user',
      content: [{ type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }],
    });
    expect(request.messages[2]).toEqual({
      role: 'tool',
      toolCallId: 's',
      content: [
        { type: 'text', text: 'ok' },
        { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
      ],
    });
  });

  it('turns a base64 PDF document into a FilePart and a text document into text', () => {
    const request = decode({
      ...base,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'document',
              title: 'spec.pdf',
              source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' },
            },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
          ],
        },
      ],
    });
    expect(request.messages[0]!.content).toEqual([
      { type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf', filename: 'spec.pdf' },
      { type: 'text', text: 'plain words' },
    ]);
  });

  it('keeps redacted thinking as an opaque reasoning part', () => {
    const request = decode({
      ...base,
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: [
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'a' },
          ],
        },
      ],
    });
    expect(request.messages[1]!.content[0]).toEqual({
      type: 'reasoning',
      text: '',
      signature: 'opaque',
      redacted: true,
    });
  });

  it('rejects what cannot be mapped with a 400 naming the field', () => {
    const withContent = (content: unknown) => ({
      ...base,
      messages: [
        { role: 'user', content: 'x' },
        { role: 'user', content },
      ],
    });
    expectBadRequest(
      withContent([{ type: 'image', source: { type: 'file', file_id: 'file_1' } }]),
      'messages.1.content.0.source',
      'unsupported_field',
    );
    expectBadRequest(
      withContent([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }]),
      'messages.1.content.0.source.media_type',
    );
    expectBadRequest(withContent([{ type: 'text' }]), 'messages.1.content.0.text');
    expectBadRequest(withContent([{ type: 'tool_use', id: 'a', name: 'b', input: {} }]), 'messages.1.content.0.type');
    expectBadRequest(
      withContent([{ type: 'server_tool_use', id: 'a' }]),
      'messages.1.content.0.type',
      'unsupported_field',
    );
    expectBadRequest(
      withContent([{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }]),
      'messages.1.content.0.source',
      'unsupported_field',
    );
    expectBadRequest(withContent(42), 'messages.1.content');
    expectBadRequest(withContent(['text']), 'messages.1.content.0');
    expectBadRequest({ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages.0.role');
    expectBadRequest({ ...base, messages: [] }, 'messages');
    expectBadRequest(
      { ...base, messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: '{}' }] }] },
      'messages.0.content.0.input',
    );
    expectBadRequest(
      { ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', is_error: 'yes' }] }] },
      'messages.0.content.0.is_error',
    );
  });
});
