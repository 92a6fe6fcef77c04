/**
 * Empty-output guard (name `empty-output`): an answer that finishes with no text (whitespace
 * only counts as none) and no tool call is rejected and retried exactly. Reasoning alone does
 * not count as an answer unless `allowReasoningOnly` (it is still streamed: holding it would hide
 * a long thinking phase). Leading blank text is held until real text follows. A continuation is never empty: the client
 * already has text.
 *
 * (A stream that ends without a finish reason is not this filter's business: decoders emit an
 * `error` for it, and the gate treats it, like a stream that is cut, as a provider fault.)
 */
import type { StreamEvent } from '@iop/core';
import type { EventValidator, ValidatorFilter, Verdict } from '../filter.js';
import { reject } from '../filter.js';
import { isBlank } from './markers.js';

export interface EmptyOutputOptions {
  /** Accept an answer made of reasoning only. Default false. */
  allowReasoningOnly?: boolean;
}

export function emptyOutputGuard(options: EmptyOutputOptions = {}): ValidatorFilter {
  return {
    kind: 'validator',
    name: 'empty-output',
    create: (context) => new EmptyOutputGuard(context.continuation !== undefined, options.allowReasoningOnly === true),
  };
}

class EmptyOutputGuard implements EventValidator {
  constructor(
    private answered: boolean,
    private readonly allowReasoningOnly: boolean,
  ) {}

  check(event: StreamEvent): Verdict {
    switch (event.type) {
      case 'text-delta':
        // Blank text is held until real text follows: releasing it would commit an empty answer.
        if (!this.answered) {
          if (isBlank(event.text)) return 'hold';
          this.answered = true;
        }
        return 'pass';
      case 'reasoning-delta':
        if (this.allowReasoningOnly && event.text !== '') this.answered = true;
        return 'pass';
      case 'tool-call-delta':
        this.answered = true;
        return 'pass';
      case 'finish':
        return this.answered
          ? 'pass'
          : reject(`empty output (finish reason ${event.raw ?? event.reason})`, 'retry-exact');
      default:
        return 'pass';
    }
  }
}
