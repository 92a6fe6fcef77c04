/**
 * Finish reason → Response `status` and `incomplete_details` (docs/protocols.md "Finish reasons"): `length` →
 * `incomplete` / `max_output_tokens`, `content_filter` → `incomplete` / `content_filter`,
 * everything else (stop, tool_calls, other) → `completed`.
 */
import type { FinishReason } from '@iop/core';
import type { IncompleteDetails, ItemStatus, ResponseStatus } from './wire-types.js';

export interface TerminalStatus {
  status: Extract<ResponseStatus, 'completed' | 'incomplete'>;
  incompleteDetails: IncompleteDetails | null;
  /** Status of the items still open when the response ended. */
  itemStatus: ItemStatus;
}

export function statusOfFinish(reason: FinishReason): TerminalStatus {
  switch (reason) {
    case 'length':
      return { status: 'incomplete', incompleteDetails: { reason: 'max_output_tokens' }, itemStatus: 'incomplete' };
    case 'content_filter':
      return { status: 'incomplete', incompleteDetails: { reason: 'content_filter' }, itemStatus: 'incomplete' };
    default:
      return { status: 'completed', incompleteDetails: null, itemStatus: 'completed' };
  }
}
