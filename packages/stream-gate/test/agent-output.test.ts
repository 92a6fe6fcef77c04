import type { StreamEvent } from '@iop/core';
import { IopError } from '@iop/core';
import { createFilters } from '../src/filters/registry.js';
import { closingTool } from '../src/filters/agent-output';
import { request, runGate, timeTool } from './helpers';

/** Cline's XML tools (a subset of its system prompt's). */
const xmlTools = ['read_file', 'execute_command', 'attempt_completion', 'ask_followup_question'];

function turn(text: string, reason: 'stop' | 'length' = 'stop'): StreamEvent[] {
  const events: StreamEvent[] = [{ type: 'response-start', id: 'r', model: 'm', created: 1 }];
  // Three deltas, so holding and releasing are exercised.
  const third = Math.ceil(text.length / 3);
  for (let i = 0; i < text.length; i += third) events.push({ type: 'text-delta', text: text.slice(i, i + third) });
  events.push({ type: 'finish', reason, raw: reason });
  return events;
}

const textOf = (events: readonly StreamEvent[]) =>
  events.map((event) => (event.type === 'text-delta' ? event.text : '')).join('');
const TOOL_TURN = 'I will read it.\n<read_file>\n<path>src/a.ts</path>\n</read_file>';

describe('agent-output policy', () => {
  it('closingTool finds the element that ends the text', () => {
    expect(closingTool(TOOL_TURN)).toBe('read_file');
    expect(closingTool('<path>x</path> and then prose')).toBeUndefined();
    expect(closingTool('no open tag</read_file>')).toBeUndefined();
  });

  it('strict: a turn that ends in a declared XML tool passes on the first attempt', async () => {
    const { released, dispatcher } = await runGate({
      filters: createFilters([{ name: 'agent-output', options: { mode: 'strict', xmlTools } }]),
      scripts: [{ events: turn(TOOL_TURN) }],
      request: request(),
    });
    expect(dispatcher.attempts).toHaveLength(1);
    expect(textOf(released)).toBe(TOOL_TURN);
  });

  it('strict: plain text, or an undeclared tool, is retried with a corrective message naming the tools', async () => {
    for (const bad of ['Done, the file is fixed.', 'x <made_up_tool>\n</made_up_tool>']) {
      const { released, dispatcher } = await runGate({
        filters: createFilters([{ name: 'agent-output', options: { mode: 'streamBuffer', xmlTools } }]),
        scripts: [{ events: turn(bad) }, { events: turn(TOOL_TURN) }],
        request: request(),
      });
      expect(dispatcher.attempts).toHaveLength(2);
      const patch = dispatcher.attempts[1]!.request.messages.at(-1)!;
      expect(patch.role).toBe('user');
      expect(JSON.stringify(patch.content)).toContain(
        'read_file, execute_command, attempt_completion, ask_followup_question',
      );
      // streamBuffer: the rejected turn never reached the client.
      expect(textOf(released)).toBe(TOOL_TURN);
    }
  });

  it('strict: a native tool call ends a turn too; the output limit passes as generated', async () => {
    const native: StreamEvent[] = [
      { type: 'text-delta', text: 'checking' },
      { type: 'tool-call-delta', index: 0, id: 'c', name: 'get_time', argumentsDelta: '{}' },
      { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
    ];
    const filters = createFilters([{ name: 'agent-output', options: { mode: 'strict' } }]);
    expect(
      (await runGate({ filters, scripts: [{ events: native }], request: request({ tools: [timeTool] }) })).dispatcher
        .attempts,
    ).toHaveLength(1);
    expect(
      (await runGate({ filters, scripts: [{ events: turn('cut sho', 'length') }], request: request() })).dispatcher
        .attempts,
    ).toHaveLength(1);
  });

  it('xmlCompletionTool: a plain answer is wrapped in attempt_completion; a tool turn is left alone', async () => {
    const filters = createFilters([{ name: 'agent-output', options: { mode: 'xmlCompletionTool', xmlTools } }]);
    const plain = await runGate({
      filters,
      scripts: [{ events: turn('  The bug was an off-by-one.\n') }],
      request: request(),
    });
    expect(textOf(plain.released)).toBe(
      '<attempt_completion>\n<result>\nThe bug was an off-by-one.\n</result>\n</attempt_completion>',
    );
    const tool = await runGate({ filters, scripts: [{ events: turn(TOOL_TURN) }], request: request() });
    expect(textOf(tool.released)).toBe(TOOL_TURN);
    const custom = createFilters([
      {
        name: 'agent-output',
        options: { mode: 'xmlCompletionTool', completionTool: 'finish', resultParameter: 'answer' },
      },
    ]);
    expect(
      textOf((await runGate({ filters: custom, scripts: [{ events: turn('ok') }], request: request() })).released),
    ).toBe('<finish>\n<answer>\nok\n</answer>\n</finish>');
  });

  it('a bad config is refused naming the filter', () => {
    expect(() => createFilters(['agent-output'])).toThrow(IopError);
    expect(() => createFilters([{ name: 'agent-output', options: { mode: 'loose' as never } }])).toThrow(
      /filters\[0\]: agent-output: mode must be one of strict, streamBuffer, xmlCompletionTool/,
    );
    expect(() =>
      createFilters([{ name: 'agent-output', options: { mode: 'strict', xmlTools: ['not a name'] } }]),
    ).toThrow(/not an XML element name/);
  });
});
