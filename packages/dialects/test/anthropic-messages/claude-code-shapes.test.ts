import type { StreamEvent } from '@iop/core';
import { IopError } from '@iop/core';
import { decodeMessagesRequest } from '../../src/anthropic-messages/request-decode';
import { encodeResponse } from '../../src/anthropic-messages/response-encode';
import { placeBillingHeader, toBackendChatRequest } from '../../src/openai-chat/backend-request';
import { decodeSlices } from '../openai-chat/helpers';
import { context, encodeAll, parseSse } from './helpers';

/**
 * A Claude Code 2.1.x turn shape (docs/protocols.md "Claude Code"): billing line first, a system message between user
 * turns.
 */
const BILLING = 'x-anthropic-billing-header: cc_version=2.1.332.a1b; cc_entrypoint=cli; cch=4f2e1;';
const claudeCodeBody = {
  model: 'qwen3-8b',
  max_tokens: 32000,
  system: [
    { type: 'text', text: `${BILLING}\nYou are Claude Code.` },
    { type: 'text', text: 'Tool rules.', cache_control: { type: 'ephemeral' } },
  ],
  messages: [
    { role: 'user', content: 'fix the bug' },
    { role: 'system', content: 'The user switched to plan mode.' },
    { role: 'user', content: [{ type: 'text', text: 'go on', cache_control: { type: 'ephemeral' } }] },
  ],
};

describe('what Claude Code sends, on a chat backend', () => {
  it('a mid-conversation system message is folded into the leading system prompt; the user turns around it merge', () => {
    const { body } = toBackendChatRequest(decodeMessagesRequest(claudeCodeBody), {
      model: 'm',
      stream: true,
      billingHeader: 'keep',
    });
    expect(body.messages).toEqual([
      { role: 'system', content: `${BILLING}\nYou are Claude Code.\n\nTool rules.\n\nThe user switched to plan mode.` },
      { role: 'user', content: 'fix the bug\n\ngo on' },
    ]);
  });

  it('the billing line moves to the end of the system prompt by default (the shared start stays cacheable), or is dropped', () => {
    const system = (placement?: 'end' | 'drop') => {
      const { body } = toBackendChatRequest(decodeMessagesRequest(claudeCodeBody), {
        model: 'm',
        stream: true,
        ...(placement ? { billingHeader: placement } : {}),
      });
      return (body.messages as Array<{ content: string }>)[0]!.content;
    };
    expect(system()).toBe(`You are Claude Code.\n\nTool rules.\n\nThe user switched to plan mode.\n\n${BILLING}`);
    expect(system('drop')).toBe('You are Claude Code.\n\nTool rules.\n\nThe user switched to plan mode.');
    // Two conversations differ only in the billing line: their system prompts now share everything before it.
    const other = placeBillingHeader(`${BILLING.replace('4f2e1', '9c0d7')}\nYou are Claude Code.`, 'end');
    expect(other.startsWith('You are Claude Code.')).toBe(true);
    expect(placeBillingHeader('No billing here.', 'end')).toBe('No billing here.');
  });

  it('a tool_use without a tool_result in the next user turn is a 400 in the API’s words, naming the ids', () => {
    const decode = () =>
      decodeMessagesRequest({
        model: 'm',
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'read both' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 'toolu_a', name: 'Read', input: {} },
              { type: 'tool_use', id: 'toolu_b', name: 'Read', input: {} },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' }] },
        ],
      });
    expect(decode).toThrow(IopError);
    expect(decode).toThrow(
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    );
    try {
      decode();
    } catch (error) {
      expect((error as IopError).status).toBe(400);
    }
    // A final assistant turn with tool_use (nothing after it) and answered calls are fine.
    expect(() =>
      decodeMessagesRequest({
        model: 'm',
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_c', name: 'Read', input: {} }] },
        ],
      }),
    ).not.toThrow();
  });

  it('thinking blocks only when the request enabled thinking', () => {
    const events: StreamEvent[] = [
      { type: 'response-start', id: 'r', model: 'm', created: 1 },
      { type: 'reasoning-delta', text: 'let me think' },
      { type: 'text-delta', text: 'Hi' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ];
    const off = context({ reasoning: { enabled: false } });
    expect(encodeResponse(events, off).content).toEqual([{ type: 'text', text: 'Hi', citations: null }]);
    const streamed = parseSse(encodeAll(events, off)).filter((event) => event.event === 'content_block_start');
    expect(
      streamed.map((event) => (event.data as unknown as { content_block: { type: string } }).content_block.type),
    ).toEqual(['text']);
    expect(
      encodeResponse(events, context({ reasoning: { enabled: true } })).content.map((block) => block.type),
    ).toEqual(['thinking', 'text']);
  });

  it('SGLang matched_stop and vLLM stop_reason both become stop_sequence with the string', () => {
    const body = (field: string) =>
      new TextEncoder().encode(
        `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop', [field]: 'END' }] })}\n\ndata: [DONE]\n\n`,
      );
    for (const field of ['matched_stop', 'stop_reason']) {
      const events = decodeSlices([body(field)]);
      expect(events.find((event) => event.type === 'finish')).toEqual({
        type: 'finish',
        reason: 'stop',
        raw: 'stop',
        stopSequence: 'END',
      });
      const message = encodeResponse(events, context());
      expect([message.stop_reason, message.stop_sequence]).toEqual(['stop_sequence', 'END']);
    }
    // SGLang's integer matched_stop is a stop token id: no stop string.
    const events = decodeSlices([
      new TextEncoder().encode(
        `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop', matched_stop: 151645 }] })}\n\n`,
      ),
    ]);
    expect(encodeResponse(events, context()).stop_reason).toBe('end_turn');
  });
});

describe('tool search (beta advanced-tool-use-2025-11-20, Claude Code 2.1.332)', () => {
  const tools = [
    {
      name: 'ToolSearch',
      description: 'Find tools',
      input_schema: { type: 'object', properties: { query: { type: 'string' } } },
    },
    {
      name: 'CronList',
      description: 'List cron jobs',
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    },
    {
      name: 'CronDelete',
      description: 'Delete a cron job',
      input_schema: { type: 'object', properties: { id: { type: 'string' } } },
      defer_loading: true,
    },
  ];

  it('deferred tools are not offered until a tool_reference loads them', () => {
    const first = decodeMessagesRequest({
      model: 'm',
      max_tokens: 10,
      tools,
      messages: [{ role: 'user', content: 'list my cron jobs' }],
    });
    expect(first.tools?.map((tool) => tool.name)).toEqual(['ToolSearch']);
  });

  it('a tool_reference in a tool_result is accepted, rendered as text, and offers the referenced tool', () => {
    const request = decodeMessagesRequest({
      model: 'm',
      max_tokens: 10,
      tools,
      messages: [
        { role: 'user', content: 'list my cron jobs' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_s', name: 'ToolSearch', input: { query: 'cron' } }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_s',
              content: [{ type: 'tool_reference', tool_name: 'CronList' }],
            },
          ],
        },
      ],
    });
    expect(request.tools?.map((tool) => tool.name)).toEqual(['ToolSearch', 'CronList']);
    const { body } = toBackendChatRequest(request, { model: 'm', stream: false });
    const toolMessage = (body.messages as Array<{ role: string; content: string }>).find(
      (message) => message.role === 'tool',
    );
    expect(toolMessage?.content).toContain('CronList');
    expect((body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)).toEqual([
      'ToolSearch',
      'CronList',
    ]);
  });
});
