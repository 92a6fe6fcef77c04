/**
 * Small helpers shared by the stream gate suites: reading the edge's Prometheus counters, the
 * sim's request log and fault queue, and writing an edge config file with a gate section.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simRequests, type EdgeHandle, type SimHandle } from './harness';

/** Sum of a Prometheus sample over every label set that contains all of `labels` (exact values). */
export async function metricSum(edge: EdgeHandle, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${edge.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    if (Object.entries(labels).every(([key, value]) => labelText.includes(`${key}="${value}"`)))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Queues a fault (with knobs) for the sim's next `count` chat completion requests. */
export async function queueFault(sim: SimHandle, fault: Record<string, string | number | boolean>): Promise<void> {
  const response = await fetch(`${sim.url}/_sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  if (response.status !== 200) throw new Error(`queueing a fault failed: ${response.status} ${await response.text()}`);
}

export async function clearSim(sim: SimHandle): Promise<void> {
  await fetch(`${sim.url}/_sim/requests`, { method: 'DELETE' });
  await fetch(`${sim.url}/_sim/faults`, { method: 'DELETE' });
}

/** Writes `{ gate }` as an edge config file in a fresh temp folder; returns its path. */
export function writeGateConfig(gate: Record<string, unknown>): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'iop-gate-')), 'edge.json');
  writeFileSync(file, JSON.stringify({ gate }));
  return file;
}

/** The sim's logged chat completion requests (the agent's own `GET /v1/models` probes left out). */
export async function chatRequests(sim: SimHandle): Promise<Array<Record<string, unknown>>> {
  return (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
}
