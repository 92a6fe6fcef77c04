/**
 * `POST /v1/chat/completions`: resolves the knobs of the request, applies a fault if one is due,
 * plans the output and writes it as a stream or as one `chat.completion` body.
 */
import type { KvEventPublisher } from './kv-events.js';
import { randomUUID } from 'node:crypto';
import { readChatRequest, lastUserText, resolveToolCalls, type ChatRequest } from './chat-request.js';
import { renderChatCompletion } from './chat-response.js';
import { ChatStream, MID_STREAM_FAULTS, type MidStreamFault, type StreamSetup } from './chat-stream.js';
import { ChunkFramer, type StreamUsageMode } from './chunk-framer.js';
import { resetSocket, sendError, type Exchange } from './exchange.js';
import type { FaultQueue } from './fault-queue.js';
import { knobsFromHeaders } from './knob-specs.js';
import type { FaultName, Knobs } from './knobs.js';
import { parseModelName } from './model-name.js';
import { buildOutputPlan, type OutputPlan } from './output-plan.js';
import { mixSeed, seededRandom, type Random } from './prng.js';
import { sampleValue } from './tool-arguments.js';
import type { RequestLog, SimStats } from './request-log.js';
import { contextLengthMessage } from './sim-error.js';
import { countMessageTokens } from './tokenizer.js';
import type { GpuScheduler } from './gpu-scheduler.js';
import { respondOnGpu, streamOnGpu } from './gpu-completion.js';
import { sendJsonWithFault } from './json-fault.js';

export interface SimContext {
  models: ReadonlySet<string>;
  defaults: Readonly<Knobs>;
  log: RequestLog;
  faults: FaultQueue;
  /** Multiplies every simulated delay (knobs and GPU profile); 1 = real time. */
  timeScale: number;
  /** The GPU model when a profile is selected: requests then queue, prefill and decode on it. */
  gpu: GpuScheduler | undefined;
  /** The KV event publisher when KV events are on. */
  kvEvents?: KvEventPublisher | undefined;
}

/** Salt that separates the fault-rate draw from the output draws of the same request. */
const FAULT_SALT = 0x5eed;

/** Resolves the knobs: CLI defaults < model suffix < `x-sim-*` headers < queued fault. */
export function resolveKnobs(context: SimContext, exchange: Exchange, suffixKnobs: Partial<Knobs> | undefined): Knobs {
  const headerKnobs = knobsFromHeaders(exchange.req.headers);
  const queued = context.faults.take();
  if (suffixKnobs === undefined && headerKnobs === undefined && queued === undefined) return context.defaults as Knobs;
  return { ...context.defaults, ...suffixKnobs, ...headerKnobs, ...queued };
}

/** The fault for this request after the seeded `fault-rate` draw. */
export function drawFault(knobs: Knobs, requestNumber: number): FaultName {
  if (knobs.fault === 'none' || knobs.faultRate >= 1) return knobs.fault;
  return seededRandom(mixSeed(knobs.seed ^ FAULT_SALT, requestNumber))() < knobs.faultRate ? knobs.fault : 'none';
}

/** Structured output: a value that fits the schema (json_schema), or a small object (json_object). */
function jsonContent(format: NonNullable<ChatRequest['responseFormat']>, random: Random): string {
  return JSON.stringify(format.type === 'json_schema' ? sampleValue(format.schema, random) : { answer: 'lorem ipsum' });
}

export function sendStatusFault(exchange: Exchange, status: 403 | 429 | 500 | 503, retryAfter: number): void {
  const messages = {
    403: 'simulated fault: forbidden',
    429: 'simulated fault: too many requests',
    500: 'simulated fault: internal server error',
    503: 'simulated fault: service unavailable',
  };
  sendError(exchange, status, messages[status], null, retryAfter > 0 ? { 'retry-after': String(retryAfter) } : {});
}

/**
 * Handles one parsed chat completion body.
 * @throws SimInputError for a bad body or knob (the caller writes the 400).
 */
export function handleChatCompletion(context: SimContext, exchange: Exchange, body: unknown): void {
  const request = readChatRequest(body);
  exchange.record.model = request.model;
  const modelName = parseModelName(request.model);
  if (!context.models.has(modelName.base)) {
    sendError(exchange, 404, `The model \`${request.model}\` does not exist.`);
    return;
  }
  const knobs = resolveKnobs(context, exchange, modelName.knobs);
  const fault = drawFault(knobs, exchange.record.id);
  if (fault !== 'none') context.log.markFault(exchange.record, fault);
  const promptTokens = countMessageTokens(request.messages);

  switch (fault) {
    case '403':
    case '429':
    case '500':
    case '503':
      sendStatusFault(exchange, Number(fault) as 403 | 429 | 500 | 503, fault === '403' ? 0 : knobs.retryAfter);
      return;
    case 'reset':
      resetSocket(exchange);
      return;
    case 'no-response':
      return; // the socket stays open until the client or the server closes it
    case 'context-length':
      sendError(
        exchange,
        400,
        contextLengthMessage(knobs.maxModelLen, promptTokens, request.maxTokens ?? knobs.maxModelLen),
      );
      return;
    default:
      break;
  }
  if (
    promptTokens >= knobs.maxModelLen ||
    (request.maxTokens !== undefined && promptTokens + request.maxTokens > knobs.maxModelLen)
  ) {
    sendError(exchange, 400, contextLengthMessage(knobs.maxModelLen, promptTokens, request.maxTokens ?? 0));
    return;
  }

  const toolCalls = resolveToolCalls(request, knobs.toolCalls, knobs.ignoreToolChoice);
  const random = seededRandom(request.seed ?? mixSeed(knobs.seed, exchange.record.id));
  const plan = buildOutputPlan({
    knobs,
    random,
    ...(request.responseFormat === undefined ? {} : { jsonText: jsonContent(request.responseFormat, random) }),
    maxTokens: request.maxTokens ?? knobs.maxModelLen - promptTokens,
    echoText: knobs.content === 'echo' ? lastUserText(request.messages) : '',
    tools: request.tools,
    toolCallCount: toolCalls.count,
    forcedToolName: toolCalls.forcedName,
    stop: request.stop,
  });
  exchange.record.output = {
    finishReason: plan.finishReason,
    promptTokens,
    completionTokens: plan.pieces.length,
    toolCalls: plan.toolCalls.map(({ id, name, arguments: text, invalid }) => ({ id, name, arguments: text, invalid })),
  };
  const scale = context.timeScale;
  const ttftMs = (fault === 'slow-first-token' ? knobs.slowTtftMs : knobs.ttftMs) * scale;
  const midStreamFault = MID_STREAM_FAULTS.includes(fault) ? (fault as MidStreamFault) : undefined;
  const faultAfter = knobs.faultAfter ?? Math.floor(plan.pieces.length / 2);
  const timing = { ttftMs, itlMs: knobs.itlMs * scale, fault: midStreamFault, faultAfter };
  if (context.gpu !== undefined) {
    // Under a profile the GPU model decides TTFT and ITL; a slow-first-token fault still delays the first token.
    const gpuTiming = { ...timing, ttftMs: fault === 'slow-first-token' ? ttftMs : 0 };
    if (request.stream)
      streamOnGpu(
        context.gpu,
        exchange,
        request.messages,
        plan,
        streamOptions(exchange, request, knobs, promptTokens, gpuTiming, context.log.stats),
      );
    else
      respondOnGpu(
        context.gpu,
        exchange,
        request.messages,
        plan,
        gpuTiming.ttftMs,
        () =>
          respondNow(exchange, request, plan, promptTokens, midStreamFault, Math.min(knobs.cachedTokens, promptTokens)),
        midStreamFault === 'stall',
      );
    return;
  }
  if (request.stream)
    streamCompletion(exchange, plan, streamOptions(exchange, request, knobs, promptTokens, timing, context.log.stats));
  else
    respondCompletion(
      exchange,
      request,
      plan,
      promptTokens,
      ttftMs + Math.max(0, plan.pieces.length - 1) * timing.itlMs,
      midStreamFault,
      Math.min(knobs.cachedTokens, promptTokens),
    );
}

function completionId(): string {
  return `chatcmpl-${randomUUID().replaceAll('-', '')}`;
}

function streamOptions(
  exchange: Exchange,
  request: ChatRequest,
  knobs: Knobs,
  promptTokens: number,
  timing: { ttftMs: number; itlMs: number; fault: MidStreamFault | undefined; faultAfter: number },
  stats: SimStats,
): StreamSetup {
  const continuous = knobs.continuousUsage || request.continuousUsage;
  const usageChunk = request.includeUsage || knobs.forceUsage || continuous;
  const usageMode: StreamUsageMode = continuous ? 'continuous' : usageChunk ? 'null' : 'absent';
  const framer = new ChunkFramer(
    completionId(),
    Math.floor(Date.now() / 1000),
    request.model,
    usageMode,
    promptTokens,
    Math.min(knobs.cachedTokens, promptTokens),
  );
  return {
    framer,
    options: {
      ...timing,
      usageChunk,
      framing: knobs.framing,
      onServerClose: () => (exchange.closedByServer = true),
      stats,
    },
  };
}

function streamCompletion(exchange: Exchange, plan: OutputPlan, setup: StreamSetup): void {
  const stream = new ChatStream(exchange.res, plan, setup.framer, setup.options);
  exchange.onClose = () => stream.stop();
  exchange.record.status = 200;
  stream.start();
}

/** The non-stream answer once generation is done, with the request's mid-stream fault (json-fault.ts). */
function respondNow(
  exchange: Exchange,
  request: ChatRequest,
  plan: OutputPlan,
  promptTokens: number,
  fault: MidStreamFault | undefined,
  cachedTokens: number,
): void {
  if (exchange.res.destroyed) return;
  const body = JSON.stringify(
    renderChatCompletion(
      completionId(),
      Math.floor(Date.now() / 1000),
      request.model,
      plan,
      promptTokens,
      cachedTokens,
    ),
  );
  sendJsonWithFault(exchange, body, fault);
}

/** Non-stream: waits as long as generation would take (`delayMs`: TTFT + ITL per further token), then answers whole. */
function respondCompletion(
  exchange: Exchange,
  request: ChatRequest,
  plan: OutputPlan,
  promptTokens: number,
  delayMs: number,
  fault: MidStreamFault | undefined,
  cachedTokens: number,
): void {
  if (fault === 'stall') return;
  const respond = () => respondNow(exchange, request, plan, promptTokens, fault, cachedTokens);
  if (delayMs <= 0) {
    respond();
    return;
  }
  const timer = setTimeout(respond, delayMs);
  exchange.onClose = () => clearTimeout(timer);
}
