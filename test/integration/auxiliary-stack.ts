/**
 * The stack the auxiliary API tests run against: a sim serving `sim-model` and `sim-embed`, an edge with a key limited
 * to 40 tokens a minute on `sim-model` and a 4 s request deadline, an agent serving `sim-model` (and a slow variant),
 * and an agent whose server serves embeddings only. All real processes on loopback.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, type EdgeHandle, type SimHandle } from './harness';
import { ADMIN_KEY } from './shared-state-helpers';

export const LIMITED_KEY = 'sk-iop-aux-limited-0001';

export interface AuxiliaryStack {
  sim: SimHandle;
  edge: EdgeHandle;
  client: OpenAI;
}

export async function startAuxiliaryStack(): Promise<AuxiliaryStack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'iop-aux-'));
  const configFile = path.join(dataDir, 'edge.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      keys: [{ id: 'aux', name: 'aux', key: LIMITED_KEY, models: ['sim-model'], limits: { tokensPerMinute: 40 } }],
    }),
  );
  const sim = await startSim(['--models', 'sim-model,sim-embed', '--output-tokens', '12']);
  const edge = await startEdge({
    args: ['--config', configFile, '--request-deadline-ms', '4000'],
    env: { IOP_DATA_DIR: dataDir, IOP_ADMIN_KEYS: ADMIN_KEY },
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-aux',
    backendUrl: sim.url,
    models: ['sim-model', 'sim-model@itl-ms=100'],
  });
  // An agent that declares its server an embeddings-only one (as a vLLM pooling model is).
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-embed',
    backendUrl: sim.url,
    models: ['sim-embed'],
    args: ['--apis', 'embeddings'],
  });
  return { sim, edge, client: new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 }) };
}

/** A JSON POST to the edge with `key`: its status and body. */
export async function postJson(
  edge: EdgeHandle,
  path: string,
  body: unknown,
  key = API_KEY,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${edge.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
