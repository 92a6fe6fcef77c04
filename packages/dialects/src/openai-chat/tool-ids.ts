/**
 * Tool-call id mapping between the client and a backend. Most backends take any id; Mistral-style
 * chat templates require 9-character alphanumeric ids (`toolIdFormat: 'alnum9'`). Client ids are
 * then mapped deterministically (SHA-256 → base62) in the request, and the map restores them in
 * the decoded output so the client's later `tool_call_id` still matches (docs/protocols.md "Tool calls and ids").
 */
import { createHash } from 'node:crypto';
import type { StreamEvent } from '@iop/core';

export type ToolIdFormat = 'any' | 'alnum9';

/** Client id ↔ backend id, for one request. */
export interface ToolIdMap {
  /** The id to send to the backend for a client id. */
  toBackend(clientId: string): string;
  /** The client id for a backend id; ids the map does not know (new calls) come back unchanged. */
  toClient(backendId: string): string;
  /** True when no id was changed (the map is the identity). */
  readonly identity: boolean;
}

const ALPHANUMERIC_9 = /^[A-Za-z0-9]{9}$/;
const BASE62 = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function alnum9(clientId: string, salt: number): string {
  const digest = createHash('sha256')
    .update(salt === 0 ? clientId : `${clientId}#${salt}`)
    .digest();
  let out = '';
  for (let i = 0; i < 9; i++) out += BASE62[digest[i]! % 62];
  return out;
}

const IDENTITY: ToolIdMap = { toBackend: (id) => id, toClient: (id) => id, identity: true };

class MappedToolIds implements ToolIdMap {
  private readonly backendOf = new Map<string, string>();
  private readonly clientOf = new Map<string, string>();
  identity = true;

  toBackend(clientId: string): string {
    const known = this.backendOf.get(clientId);
    if (known !== undefined) return known;
    let backendId = clientId;
    if (!ALPHANUMERIC_9.test(clientId) || this.clientOf.has(clientId)) {
      let salt = 0;
      do backendId = alnum9(clientId, salt++);
      while (this.clientOf.has(backendId));
      this.identity = false;
    }
    this.backendOf.set(clientId, backendId);
    this.clientOf.set(backendId, clientId);
    return backendId;
  }

  toClient(backendId: string): string {
    return this.clientOf.get(backendId) ?? backendId;
  }
}

/** A fresh map for one request: the identity for `any`, a deterministic 9-char alnum map for `alnum9`. */
export function createToolIdMap(format: ToolIdFormat = 'any'): ToolIdMap {
  return format === 'alnum9' ? new MappedToolIds() : IDENTITY;
}

/**
 * Wraps an event callback so tool-call ids in `tool-call-delta` events are restored to client ids.
 * Returns `onEvent` itself when the map is the identity (no per-event cost).
 */
export function restoreToolIds(
  toolIds: ToolIdMap,
  onEvent: (event: StreamEvent) => void,
): (event: StreamEvent) => void {
  if (toolIds.identity) return onEvent;
  return (event) => {
    if (event.type === 'tool-call-delta' && event.id !== undefined) {
      const clientId = toolIds.toClient(event.id);
      if (clientId !== event.id) {
        onEvent({ ...event, id: clientId });
        return;
      }
    }
    onEvent(event);
  };
}
