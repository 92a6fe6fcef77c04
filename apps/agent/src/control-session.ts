/**
 * One `Control` stream (proto/iop/v1/tunnel.proto): sends Register, waits for Registered, then
 * sends a Heartbeat every `heartbeat_interval_ms` and hands each edge message to the agent.
 * `run()` resolves when the edge ends the stream and rejects when it fails (a ConnectError, e.g.
 * `UNAUTHENTICATED` for a wrong join token).
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  AgentMessageSchema,
  HeartbeatSchema,
  type AgentMessage,
  type CancelRun,
  type Drain,
  type Registered,
  type RegisterSchema,
  type RunAssignment,
} from '@iop/proto';
import { AsyncQueue } from '@iop/core';
import { controlCall } from './control-call.js';
import type { RunConnection } from './run-call.js';

export interface ControlSessionHandlers {
  onRegistered(registered: Registered): void;
  onAssign(assignment: RunAssignment): void;
  onCancel(cancel: CancelRun): void;
  onDrain(drain: Drain): void;
  /** The figures of the next Heartbeat. */
  heartbeat(): Promise<MessageInitShape<typeof HeartbeatSchema>>;
}

export interface ControlSessionOptions {
  /** The link's HTTP/2 connection to the edge (its Run calls share it). */
  connection: RunConnection;
  register: MessageInitShape<typeof RegisterSchema>;
  handlers: ControlSessionHandlers;
  /** Heartbeat period when Registered gives 0, ms. */
  heartbeatFallbackMs: number;
  /** Give up when Registered does not arrive within this time, ms. */
  registeredTimeoutMs: number;
}

export class ControlSession {
  /** performance.now() when Registered arrived; undefined before. */
  registeredAt: number | undefined;
  /** The heartbeat period in force, ms (the edge's, once Registered). */
  heartbeatIntervalMs: number;
  private readonly outgoing = new AsyncQueue<AgentMessage>(Number.POSITIVE_INFINITY);
  private readonly abort = new AbortController();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatPending = false;

  constructor(private readonly options: ControlSessionOptions) {
    this.heartbeatIntervalMs = options.heartbeatFallbackMs;
  }

  async run(stop: AbortSignal): Promise<void> {
    const onStop = (): void => this.abort.abort(stop.reason);
    stop.addEventListener('abort', onStop, { once: true });
    const { registeredTimeoutMs, handlers } = this.options;
    const registeredTimer = setTimeout(
      () => this.abort.abort(new Error(`no Registered from the edge within ${registeredTimeoutMs} ms`)),
      registeredTimeoutMs,
    );
    this.outgoing.push(create(AgentMessageSchema, { message: { case: 'register', value: this.options.register } }));
    try {
      for await (const message of controlCall(this.options.connection, this.outgoing, this.abort.signal)) {
        switch (message.message.case) {
          case 'registered':
            clearTimeout(registeredTimer);
            this.onRegistered(message.message.value);
            break;
          case 'assign':
            handlers.onAssign(message.message.value);
            break;
          case 'cancel':
            handlers.onCancel(message.message.value);
            break;
          case 'drain':
            handlers.onDrain(message.message.value);
            break;
          default:
            break;
        }
      }
    } catch (error) {
      // An abort we caused carries its reason (timeout, stop); anything else is the edge's error.
      throw this.abort.signal.aborted && !stop.aborted ? (this.abort.signal.reason ?? error) : error;
    } finally {
      clearTimeout(registeredTimer);
      clearInterval(this.heartbeatTimer);
      stop.removeEventListener('abort', onStop);
      this.outgoing.close();
    }
  }

  /** Queues a message on the stream (dropped once the stream is over). */
  send(message: AgentMessage['message']): void {
    this.outgoing.push(create(AgentMessageSchema, { message }));
  }

  /** Sends a Heartbeat now (e.g. right after a drain change). */
  sendHeartbeat(): void {
    if (this.heartbeatPending || this.outgoing.isClosed) return;
    this.heartbeatPending = true;
    this.options.handlers
      .heartbeat()
      .then((value) => this.send({ case: 'heartbeat', value: create(HeartbeatSchema, value) }))
      .catch(() => undefined)
      .finally(() => {
        this.heartbeatPending = false;
      });
  }

  /** Closes the Control stream: the agent's side ends (deregistration); the edge then ends its side. */
  end(graceMs = 2_000): void {
    this.outgoing.close();
    clearInterval(this.heartbeatTimer);
    setTimeout(() => this.abort.abort(new Error('deregistered')), graceMs).unref();
  }

  private onRegistered(registered: Registered): void {
    this.registeredAt = performance.now();
    const intervalMs = registered.heartbeatIntervalMs || this.options.heartbeatFallbackMs;
    this.heartbeatIntervalMs = intervalMs;
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(), intervalMs);
    this.options.handlers.onRegistered(registered);
  }
}
