/**
 * OpenAI Responses over a WebSocket on `/v1/responses` (docs/protocols.md "Responses over
 * WebSocket"): a real edge, agent and sim, driven by a `ws` client the way Codex CLI speaks the
 * protocol, and by the official `openai` SDK's `ResponsesWS`.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import {
  API_KEY,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';
import { ADMIN_KEY, admin } from './shared-state-helpers';
import { finalResponse, outputText, SocketClient, type ServerEvent } from './responses-websocket-client';

// Ten tokens 200 ms apart: two seconds of streaming.
const SLOW = 'sim-model@itl-ms=200';
/** Answers every turn with one call of a declared tool. */
const TOOLS = 'sim-model@tool-calls=1';

let sim: SimHandle;
let edge: EdgeHandle;
/** An edge with a short idle timeout and a cap of two connections per key (no agent: nothing runs on it). */
let capped: EdgeHandle;

beforeAll(async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-ws-'));
  sim = await startSim(['--models', 'sim-model', '--output-tokens', '10']);
  edge = await startEdge({ env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY } });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-ws',
    backendUrl: sim.url,
    models: ['sim-model', SLOW, TOOLS],
  });
  capped = await startEdge({
    args: ['--websocket-idle-timeout-ms', '1500', '--websocket-max-connections-per-key', '2'],
    env: { IOP_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'iop-ws-capped-')) },
  });
}, 90_000);

afterAll(stopAll);

async function newKey(name: string, settings: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
  const created = await admin(edge.url, 'POST', '/admin/keys', { name, ...settings });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, key: created.body.key as string };
}

/** The sim's chat requests whose last user message is `text`. */
async function simRequestsFor(text: string): Promise<Array<{ messages: Array<{ role: string; content: unknown }> }>> {
  const records = await simRequests(sim);
  return records
    .map((record) => record.body as { messages?: Array<{ role: string; content: unknown }> } | null)
    .filter((body): body is { messages: Array<{ role: string; content: unknown }> } => {
      const users = body?.messages?.filter((message) => message.role === 'user') ?? [];
      return users.length > 0 && JSON.stringify(users.at(-1)!.content).includes(text);
    });
}

const types = (events: ServerEvent[]) => events.map((event) => event.type);

describe('Responses over WebSocket', () => {
  it('two turns on one connection: the second continues the first by previous_response_id with store:false', async () => {
    const client = await SocketClient.open(edge);
    const first = finalResponse(
      await client.create({ model: 'sim-model', store: false, input: 'first-turn-question-7431' }),
    );
    expect(first.status).toBe('completed');
    expect(first.id).toMatch(/^resp_/);
    const answer = outputText(first);
    expect(answer.length).toBeGreaterThan(0);

    const second = finalResponse(
      await client.create({
        model: 'sim-model',
        store: false,
        previous_response_id: first.id,
        input: [{ role: 'user', content: 'second-turn-question-7431' }],
      }),
    );
    expect(second.status).toBe('completed');
    expect(second.id).not.toBe(first.id);
    // What the backend got for the second turn: the first question, its answer, the second question.
    const [sent] = await simRequestsFor('second-turn-question-7431');
    expect(sent).toBeDefined();
    const conversation = sent!.messages.filter((message) => message.role !== 'system' && message.role !== 'developer');
    expect(conversation.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(conversation[0]!.content)).toContain('first-turn-question-7431');
    expect(JSON.stringify(conversation[1]!.content)).toContain(answer);
    await client.close();
  });

  it('store:false responses are the connection’s own: another connection gets previous_response_not_found (400) and stays usable', async () => {
    const one = await SocketClient.open(edge);
    const kept = finalResponse(await one.create({ model: 'sim-model', store: false, input: 'kept on one connection' }));
    await one.close();
    const two = await SocketClient.open(edge);
    const [error] = await two.create({
      model: 'sim-model',
      store: false,
      previous_response_id: kept.id,
      input: 'continue',
    });
    expect(error).toMatchObject({
      type: 'error',
      status: 400,
      error: { type: 'invalid_request_error', code: 'previous_response_not_found', param: 'previous_response_id' },
    });
    expect(finalResponse(await two.create({ model: 'sim-model', input: 'fresh start' })).status).toBe('completed');
    await two.close();
  });

  it('a stored response continues on a new connection, and over HTTP', async () => {
    const one = await SocketClient.open(edge);
    const stored = finalResponse(await one.create({ model: 'sim-model', input: 'stored-turn-5120' }));
    await one.close();
    const two = await SocketClient.open(edge);
    const next = finalResponse(
      await two.create({ model: 'sim-model', previous_response_id: stored.id, input: 'next-turn-5120' }),
    );
    expect(next.status).toBe('completed');
    const [sent] = await simRequestsFor('next-turn-5120');
    expect(JSON.stringify(sent!.messages)).toContain('stored-turn-5120');
    await two.close();
    const http = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    expect((await http.responses.retrieve(next.id)).status).toBe('completed');
  });

  it('sends the same events as the SSE stream for the same request, one JSON text message each', async () => {
    const body = { model: 'sim-model', input: 'compare the transports', store: false };
    const sse = await fetch(`${edge.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const sseEvents = (await sse.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as ServerEvent);
    const client = await SocketClient.open(edge);
    const wsEvents = await client.create(body);
    expect(types(wsEvents)).toEqual(types(sseEvents));
    expect(types(wsEvents).slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(wsEvents.map((event) => event.sequence_number)).toEqual(wsEvents.map((_, index) => index));
    expect(finalResponse(wsEvents).usage).toEqual(finalResponse(sseEvents).usage);
    await client.close();
  });

  it('runs several responses in sequence; a response.create while one runs gets a 409 error event', async () => {
    const client = await SocketClient.open(edge);
    client.send({ type: 'response.create', model: SLOW, input: 'a long one', store: false });
    await client.waitFor((events) => events.some((event) => event.type === 'response.output_text.delta'));
    const from = client.events.length;
    client.send({ type: 'response.create', model: 'sim-model', input: 'too early' });
    const events = await client.waitFor((all) => all.slice(from).some((event) => event.type === 'error'));
    expect(events.slice(from).find((event) => event.type === 'error')).toMatchObject({
      status: 409,
      error: { type: 'invalid_request_error' },
    });
    await client.close();
  });

  it('bad messages get an error event and the connection stays usable; response.processed is accepted silently', async () => {
    const client = await SocketClient.open(edge);
    client.send('{not json');
    await client.waitFor((events) => events.length >= 1);
    expect(client.events[0]).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request_error' } });
    client.send({ type: 'session.update' });
    await client.waitFor((events) => events.length >= 2);
    expect(client.events[1]).toMatchObject({ type: 'error', status: 400, error: { param: 'type' } });
    client.ws.send(Buffer.from('binary'), { binary: true });
    await client.waitFor((events) => events.length >= 3);
    expect(client.events[2]).toMatchObject({ type: 'error', status: 400 });
    const [invalid] = await client.create({ model: 'sim-model', input: 42 });
    expect(invalid).toMatchObject({ type: 'error', status: 400, error: { type: 'invalid_request_error' } });
    client.send({ type: 'response.processed', response_id: 'resp_whatever' });
    const ok = finalResponse(await client.create({ model: 'sim-model', input: 'still here' }));
    expect(ok.status).toBe('completed');
    expect(client.events.filter((event) => event.type === 'error')).toHaveLength(4);
    await client.close();
  });

  it('generate:false is a warm-up: completed with no output and no backend call; its id continues the conversation', async () => {
    const client = await SocketClient.open(edge);
    const before = (await simRequests(sim)).length;
    const warm = await client.create({
      model: 'sim-model',
      store: false,
      generate: false,
      input: 'warm-up-context-9932',
    });
    expect(types(warm)).toEqual(['response.created', 'response.in_progress', 'response.completed']);
    expect(finalResponse(warm).output).toEqual([]);
    expect((await simRequests(sim)).length).toBe(before);
    const next = finalResponse(
      await client.create({
        model: 'sim-model',
        store: false,
        previous_response_id: finalResponse(warm).id,
        input: 'after-warm-up-9932',
      }),
    );
    expect(next.status).toBe('completed');
    const [sent] = await simRequestsFor('after-warm-up-9932');
    expect(JSON.stringify(sent!.messages)).toContain('warm-up-context-9932');
    await client.close();
  });

  it('a Codex-shaped session: warm-up, a turn that calls a tool, its output sent alone after previous_response_id (store:false)', async () => {
    const client = await SocketClient.open(edge, API_KEY, {
      originator: 'codex_exec',
      'session-id': 'sess-1',
      'x-client-request-id': 'sess-1',
    });
    const shell = {
      type: 'function',
      name: 'shell',
      description: 'Runs a command',
      strict: false,
      parameters: {
        type: 'object',
        properties: { command: { type: 'array', items: { type: 'string' } } },
        required: ['command'],
      },
    };
    // The fields Codex CLI sends with every response.create (codex-rs/codex-api/src/common.rs).
    const common = {
      model: TOOLS,
      instructions: 'You are a coding agent.',
      tools: [shell],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      reasoning: null,
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'sess-1',
      client_metadata: { 'x-codex-installation-id': 'install-1' },
    };
    const developer = {
      type: 'message',
      id: 'msg_dev',
      role: 'developer',
      content: [{ type: 'input_text', text: 'codex-base-prompt-6604' }],
    };
    const warm = finalResponse(await client.create({ ...common, input: [developer], generate: false }));
    client.send({ type: 'response.processed', response_id: warm.id });
    const user = {
      type: 'message',
      id: 'msg_user',
      role: 'user',
      content: [{ type: 'input_text', text: 'codex-user-turn-6604' }],
    };
    const first = finalResponse(await client.create({ ...common, previous_response_id: warm.id, input: [user] }));
    const call = first.output.find((item) => item.type === 'function_call') as
      { call_id: string; name: string } | undefined;
    expect(call?.name).toBe('shell');
    client.send({ type: 'response.processed', response_id: first.id });
    const output = { type: 'function_call_output', call_id: call!.call_id, output: 'codex-tool-output-6604' };
    const second = finalResponse(await client.create({ ...common, previous_response_id: first.id, input: [output] }));
    expect(second.status).toBe('completed');
    // The backend got the whole conversation: base prompt, the user's turn, the call and its output.
    const records = (await simRequests(sim)).map(
      (record) => record.body as { messages: Array<Record<string, unknown>> },
    );
    const last = records.find((body) => JSON.stringify(body?.messages ?? []).includes('codex-tool-output-6604'))!;
    const roles = last.messages.map((message) => message.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(JSON.stringify(last.messages[0])).toContain('You are a coding agent.');
    expect(JSON.stringify(last.messages[0])).toContain('codex-base-prompt-6604');
    expect(JSON.stringify(last.messages[1])).toContain('codex-user-turn-6604');
    expect((last.messages[2]!.tool_calls as Array<{ id: string }>)[0]!.id).toBe(call!.call_id);
    expect(last.messages[3]).toMatchObject({ role: 'tool', tool_call_id: call!.call_id });
    await client.close();
  });

  it('a key that may not use the model gets 403 in band, for a warm-up as for a response', async () => {
    const { key } = await newKey('ws-other-model', { models: ['other-model'] });
    const client = await SocketClient.open(edge, key);
    for (const generate of [false, true]) {
      const [refused] = await client.create({ model: 'sim-model', input: 'not mine', generate });
      expect(refused).toMatchObject({ type: 'error', status: 403, error: { type: 'permission_error' } });
    }
    await client.close();
  });

  it('closing mid-response cancels the backend run and writes the ledger row (499)', async () => {
    const { id, key } = await newKey('ws-abort');
    const client = await SocketClient.open(edge, key);
    client.send({ type: 'response.create', model: SLOW, input: 'abort-me-2291', store: false });
    await client.waitFor((events) => events.filter((event) => event.type === 'response.output_text.delta').length >= 3);
    client.ws.close(1000);
    let record: Record<string, unknown> | undefined;
    for (let tries = 0; tries < 100 && record?.aborted !== true; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      record = (await simRequests(sim)).find((entry) => JSON.stringify(entry.body).includes('abort-me-2291'));
    }
    expect(record).toMatchObject({ aborted: true, completed: false });
    let rows: Array<Record<string, number>> = [];
    for (let tries = 0; tries < 50 && rows.length === 0; tries++) {
      rows = (await admin(edge.url, 'GET', `/admin/usage?key=${id}&group_by=status,dialect&flush=true`)).body
        .data as Array<Record<string, number>>;
      rows = rows.filter((row) => (row.requests ?? 0) > 0);
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(rows).toEqual([expect.objectContaining({ status: 499, dialect: 'openai-responses', requests: 1 })]);
    expect(rows[0]!.output_tokens).toBeGreaterThanOrEqual(3);
    expect(rows[0]!.output_tokens).toBeLessThan(10);
  });

  it('a bad or missing key is refused at the upgrade with 401 in the Responses error envelope', async () => {
    const refused = await SocketClient.refused(edge, 'sk-not-a-key-0000');
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ error: { type: 'authentication_error', message: 'invalid API key' } });
    expect(await SocketClient.refused(edge, '')).toMatchObject({ status: 401 });
  });

  it('the per-key cap refuses one connection too many with 429, and frees the slot on close', async () => {
    const one = await SocketClient.open(capped);
    const two = await SocketClient.open(capped);
    const third = await SocketClient.refused(capped);
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect(third.headers['retry-after']).toBe('1');
    await one.close();
    const again = await SocketClient.open(capped);
    await Promise.all([two.close(), again.close()]);
  });

  it('an idle connection is closed after the idle timeout (1000)', async () => {
    const client = await SocketClient.open(capped);
    const started = Date.now();
    const closed = await client.closed;
    expect(closed).toEqual({ code: 1000, reason: 'idle timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('the openai SDK’s ResponsesWS streams two responses on one socket', async () => {
    const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const socket = new ResponsesWS(client);
    const completed: Array<{ id: string; text: string }> = [];
    let text = '';
    socket.on('response.output_text.delta', (event) => (text += event.delta));
    const done = new Promise<void>((resolve, reject) => {
      socket.on('error', reject);
      socket.on('response.completed', (event) => {
        completed.push({ id: event.response.id, text });
        text = '';
        if (completed.length === 1)
          socket.send({
            type: 'response.create',
            model: 'sim-model',
            previous_response_id: event.response.id,
            input: 'and again',
          });
        else resolve();
      });
    });
    socket.send({ type: 'response.create', model: 'sim-model', input: 'hello over the SDK' });
    await done;
    expect(completed).toHaveLength(2);
    expect(completed[0]!.text.length).toBeGreaterThan(0);
    expect(completed[1]!.id).not.toBe(completed[0]!.id);
    socket.close();
  });
});
