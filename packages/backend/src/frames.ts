/**
 * Builders of the `ProviderTunnelFrame`s of one run (proto/iop/v1/tunnel.proto): ACCEPTED,
 * RESPONSE_START, BODY, USAGE, END and ERROR, without protobuf reflection (`tunnelFrame`). The
 * relay, the agent's run and the edge's synthesized tunnel failures build their frames here.
 */
import {
  ProviderTunnelFrame_Kind as FrameKind,
  tunnelFrame,
  type ProviderTunnelFrame,
  type RunErrorCode,
} from '@iop/proto';
import type { Usage } from '@iop/core';

export { FrameKind };

/** The agent took the run. */
export function acceptedFrame(runId: string): ProviderTunnelFrame {
  return tunnelFrame({ runId, kind: FrameKind.ACCEPTED });
}

/** The backend answered: its status and headers (lower-case names). */
export function responseStartFrame(
  runId: string,
  status: number,
  headers: Record<string, string>,
): ProviderTunnelFrame {
  return tunnelFrame({ runId, kind: FrameKind.RESPONSE_START, status, headers });
}

/** One body slice, by reference. */
export function bodyFrame(runId: string, body: Uint8Array): ProviderTunnelFrame {
  return tunnelFrame({ runId, kind: FrameKind.BODY, body });
}

/** The token usage found in the body (hub field names → the frame's `Usage`; a count not reported stays absent). */
export function usageFrame(runId: string, usage: Usage): ProviderTunnelFrame {
  return tunnelFrame({
    runId,
    kind: FrameKind.USAGE,
    usage: {
      promptTokens: usage.inputTokens,
      completionTokens: usage.outputTokens,
      cachedTokens: usage.cachedInputTokens,
      reasoningTokens: usage.reasoningTokens,
    },
  });
}

/** The run ended normally. */
export function endFrame(runId: string): ProviderTunnelFrame {
  return tunnelFrame({ runId, kind: FrameKind.END });
}

/** The run failed with a stable `code` (the agent's codes, or the edge's tunnel codes). */
export function errorFrame(runId: string, code: RunErrorCode, message: string): ProviderTunnelFrame {
  return tunnelFrame({ runId, kind: FrameKind.ERROR, errorCode: code, errorMessage: message });
}

/** Whether `frame` ends its run (END or ERROR). */
export function isFinalFrame(frame: ProviderTunnelFrame): boolean {
  return frame.kind === FrameKind.END || frame.kind === FrameKind.ERROR;
}
