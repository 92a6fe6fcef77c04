/**
 * An Anthropic request decoded by this dialect, rendered as the chat body a backend receives by
 * the openai-chat backend encoder: the hub request carries everything that encoder needs.
 */
import { anthropicMessages } from '../../src/anthropic-messages/dialect.js';
import { toBackendChatRequest } from '../../src/openai-chat/backend-request';

describe('Anthropic request → hub → backend chat body', () => {
  it('folds a mid-conversation system message into the leading one, results before text, tool calls and schemas intact', () => {
    const request = anthropicMessages.decodeRequest({
      model: 'claude-sonnet-4-5',
      max_tokens: 32000,
      stream: true,
      thinking: { type: 'adaptive' },
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      tools: [
        {
          name: 'Read',
          description: 'Read a file',
          input_schema: { type: 'object', properties: { p: { type: 'string' } }, required: ['p'] },
        },
      ],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'open a' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hm', signature: 's' },
            { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { p: 'a' } },
          ],
        },
        { role: 'system', content: 'Files may be long.' },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'A!' },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    });
    const { body } = toBackendChatRequest(request, { model: 'Qwen/Qwen3-8B', stream: true });
    expect(body).toMatchObject({
      model: 'Qwen/Qwen3-8B',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 32000,
      parallel_tool_calls: false,
      tool_choice: 'auto',
      tools: [
        {
          type: 'function',
          function: {
            name: 'Read',
            description: 'Read a file',
            parameters: { type: 'object', properties: { p: { type: 'string' } }, required: ['p'] },
          },
        },
      ],
      messages: [
        { role: 'system', content: 'You are a coding agent.\n\nFiles may be long.' },
        { role: 'user', content: 'open a' },
        { role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'Read', arguments: '{"p":"a"}' } }] },
        { role: 'tool', content: 'A!' },
        { role: 'user', content: 'thanks' },
      ],
    });
    const messages = body.messages as Array<Record<string, unknown>>;
    expect(messages.filter((message) => message.role === 'system')).toHaveLength(1);
    const callId = (messages[2]!.tool_calls as Array<{ id: string }>)[0]!.id;
    expect(messages[3]!.tool_call_id).toBe(callId);
    expect(JSON.stringify(body)).not.toMatch(/cache_control|signature/);
  });
});
