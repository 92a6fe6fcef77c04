/**
 * `tool_choice` enforcement (name `tool-choice`). Always on: the gate runs it for every request
 * whatever the model's configured filters (`stream-gate.ts`), because backends that ignore
 * `tool_choice` are common (Ollama, several vLLM tool parsers) and an answer that breaks it is not
 * what the client asked for (OpenAI Chat `tool_choice`, Responses `tool_choice`, Anthropic
 * `tool_choice`; docs/protocols.md "Tools").
 *
 * - `auto` or absent: passes everything.
 * - `none`: a tool call rejects the attempt (retried with a corrective message).
 * - `required` (Anthropic `any`) and a named tool: everything is held — text, reasoning — until the
 *   first tool call shows its name, so nothing reaches the client before it is known to be a call;
 *   an answer that finishes without one, or a call of another tool than the named one, rejects
 *   the attempt (retried with a corrective message; when the attempts run out the client gets the
 *   gate's error, `upstream_error`, 502 before the first byte). A turn cut by the output limit
 *   (`length`) passes as generated, as in `tool-calls`: the client learns of the limit from its stop
 *   reason.
 *
 * The verdict depends only on the sequence of events, never on how the stream was split into them:
 * a call is recognized by its first named fragment.
 */
import type { StreamEvent, ToolChoice } from '@iop/core';
import type { EventValidator, ValidatorFilter, Verdict } from '../filter.js';
import { reject } from '../filter.js';

export const TOOL_CHOICE_FILTER_NAME = 'tool-choice';

export function toolChoiceValidator(): ValidatorFilter {
  return {
    kind: 'validator',
    name: TOOL_CHOICE_FILTER_NAME,
    create(context) {
      const choice = context.request.toolChoice;
      if (choice === undefined || choice.type === 'auto') return PASS_ALL;
      if (choice.type === 'none') return new NoToolValidator();
      return new ForcedToolValidator(choice);
    },
  };
}

/** Whether a tool choice forces a call (`required` or a named tool): such answers are held until a call shows. */
export function forcesToolCall(choice: ToolChoice | undefined): boolean {
  return choice?.type === 'required' || choice?.type === 'tool';
}

const PASS_ALL: EventValidator = { check: () => 'pass' };

class NoToolValidator implements EventValidator {
  check(event: StreamEvent): Verdict {
    if (event.type !== 'tool-call-delta') return 'pass';
    return reject('a tool was called although tool_choice is none', 'retry-with-patch', {
      patch: 'Do not call any tool. Answer in plain text.',
    });
  }
}

class ForcedToolValidator implements EventValidator {
  /** A tool call (of the right tool) has begun: from here on nothing is held for the choice. */
  private called = false;

  constructor(private readonly choice: { type: 'required' } | { type: 'tool'; name: string }) {}

  check(event: StreamEvent): Verdict {
    switch (event.type) {
      case 'tool-call-delta': {
        if (event.name === undefined) return this.called ? 'pass' : 'hold';
        if (this.choice.type === 'tool' && event.name !== this.choice.name) {
          return reject(
            `tool ${event.name} called although tool_choice names ${this.choice.name}`,
            'retry-with-patch',
            {
              patch: `Call the tool "${this.choice.name}".`,
            },
          );
        }
        this.called = true;
        return 'pass';
      }
      case 'finish':
        if (this.called || event.reason === 'length') return 'pass';
        return this.choice.type === 'tool'
          ? reject(`tool_choice names ${this.choice.name} but no tool was called`, 'retry-with-patch', {
              patch: `You must call the tool "${this.choice.name}" now.`,
            })
          : reject('tool_choice is required but no tool was called', 'retry-with-patch', {
              patch: 'You must call one of the available tools now.',
            });
      default:
        return this.called ? 'pass' : 'hold';
    }
  }
}
