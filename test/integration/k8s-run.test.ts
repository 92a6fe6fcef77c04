/**
 * The rendered single-edge overlay run for real (deploy/k8s; the manifests' checks are k8s-manifests.test.ts): the
 * rendered edge and agent environments start the real edge and agent (ports 0, the agent in front of the sim): the
 * agent joins with the Secret's join token, the probe paths answer as the probes expect, a client with the Secret's API
 * key is served, and SIGTERM drains a stream before the agent exits, within the pod's grace period and with vLLM's
 * preStop hook (run for real) returning only once the agent's port closed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { launch, type Proc } from '../../apps/bench/src/processes';
import { startSim, stopAll, type SimHandle } from './harness';
import { container, find, kustomize, podSpec, resolvedEnv, stageDeploy, type K8sObject } from './k8s-support';

let deploy: string;
let cleanup: () => void;
const rendered: Record<string, K8sObject[]> = {};

beforeAll(() => {
  ({ deploy, cleanup } = stageDeploy());
  rendered['single-edge'] = kustomize(path.join(deploy, 'k8s/overlays', 'single-edge'));
});

afterAll(() => cleanup());

describe('the rendered edge and agent, run for real', () => {
  let sim: SimHandle;
  const procs: Proc[] = [];

  afterAll(async () => {
    await Promise.all(procs.map((proc) => proc.kill()));
    await stopAll();
  });

  it('join, answer their probes, serve a client with the Secret’s key, and drain on SIGTERM before vLLM’s preStop returns', async () => {
    const objects = rendered['single-edge']!;
    const edgeWorkloadOf = find(objects, 'Deployment', 'iop-edge');
    const edgeContainer = container(edgeWorkloadOf, 'edge');
    const agentWorkload = find(objects, 'Deployment', 'iop-agent-gpu');
    const agentContainer = container(agentWorkload, 'agent');
    sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '100']);

    // The container's command and environment; only the ports (0: any free one), the data
    // directory and the agent's dial and backend addresses are this machine's.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'iop-k8s-data-'));
    const edgeEnv: Record<string, string> = {
      ...resolvedEnv(objects, edgeContainer),
      IOP_PORT: '0',
      IOP_TUNNEL_PORT: '0',
      IOP_DATA_DIR: dataDir,
      IOP_STARTUP_GRACE_MS: '0',
    };
    const edge = launch('k8s edge', edgeContainer.command![1]!, edgeContainer.command!.slice(2), edgeEnv);
    procs.push(edge);
    const edgeReady = await edge.ready();
    const edgeUrl = `http://127.0.0.1:${edgeReady.port as number}`;
    const probe = (url: string, probePath: string) => fetch(`${url}${probePath}`).then((response) => response.status);
    expect(await probe(edgeUrl, edgeContainer.livenessProbe!.httpGet!.path)).toBe(200);
    expect(await probe(edgeUrl, edgeContainer.readinessProbe!.httpGet!.path)).toBe(503); // no agent yet

    const agentEnv = {
      ...resolvedEnv(objects, agentContainer, 'iop-agent-gpu-7d9f-abcde'),
      IOP_EDGE_URL: `http://127.0.0.1:${edgeReady.tunnelPort as number}`,
      IOP_BACKEND_URL: sim.url,
      IOP_METRICS_PORT: '0',
    };
    const agent = launch('k8s agent', agentContainer.command![1]!, [], agentEnv);
    procs.push(agent);
    const agentReady = await agent.ready(30_000);
    const agentUrl = `http://127.0.0.1:${agentReady.metricsPort as number}`;
    expect(await probe(agentUrl, agentContainer.readinessProbe!.httpGet!.path)).toBe(200);
    expect(await probe(agentUrl, agentContainer.livenessProbe!.httpGet!.path)).toBe(200);
    expect(await probe(edgeUrl, edgeContainer.readinessProbe!.httpGet!.path)).toBe(200);

    const apiKey = edgeEnv.IOP_API_KEYS!.split(',')[0]!;
    const client = new OpenAI({ apiKey, baseURL: `${edgeUrl}/v1`, maxRetries: 0 });
    const refused = await new OpenAI({ apiKey: 'sk-not-a-key-000', baseURL: `${edgeUrl}/v1`, maxRetries: 0 }).models
      .list()
      .catch((error: { status: number }) => error.status);
    expect(refused).toBe(401);
    const stream = await client.chat.completions.create({
      model: 'sim-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: string[] = [];
    let finish: string | null | undefined;
    let completionTokens = 0;
    const reading = (async () => {
      for await (const chunk of stream) {
        chunks.push(chunk.choices[0]?.delta?.content ?? '');
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
      }
    })();
    while (chunks.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));

    // The pod stops: the kubelet runs vLLM's preStop and signals the agent at once.
    const vllm = container(agentWorkload, 'vllm');
    const preStop = vllm.lifecycle!.preStop!.exec!.command.map((part) =>
      part.replace('("127.0.0.1", 8082)', `("127.0.0.1", ${agentReady.metricsPort as number})`),
    );
    const started = Date.now();
    const hook = spawn(preStop[0]!, preStop.slice(1), { stdio: 'ignore' });
    const hookDone = new Promise<number>((resolve) => hook.on('exit', () => resolve(Date.now())));
    agent.child.kill('SIGTERM');
    await reading;
    // The whole answer, drained: all 20 tokens and a finish reason, not an error.
    expect(finish).toBe('stop');
    expect(completionTokens).toBe(20);
    const exitCode = await agent.exited;
    const agentExitedAt = Date.now();
    expect(exitCode).toBe(0);
    const hookEndedAt = await hookDone;
    // The hook waited for the agent (the stream still had ~1.7 s to go) and ended once its port closed.
    expect(hookEndedAt).toBeGreaterThanOrEqual(agentExitedAt - 1500);
    expect(hookEndedAt - started).toBeGreaterThan(1000);
    expect(hookEndedAt - started).toBeLessThan(podSpec(agentWorkload).terminationGracePeriodSeconds! * 1000);
  }, 90_000);
});
