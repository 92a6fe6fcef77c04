/**
 * Reads vLLM's load figures from a Prometheus text exposition (`GET /metrics`): KV-cache usage
 * (`vllm:gpu_cache_usage_perc`, renamed `vllm:kv_cache_usage_perc` in newer releases; a fraction in
 * [0, 1]) and queued requests (`vllm:num_requests_waiting`). With several label sets (one per
 * model) the usage is the largest and the waiting count the sum.
 */
import type { BackendMetrics } from './backend.js';

const KV_NAMES = ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'];
const WAITING_NAME = 'vllm:num_requests_waiting';

export function parseVllmMetrics(text: string): BackendMetrics {
  const result: BackendMetrics = {};
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (text.charCodeAt(start) === 0x76 /* v */) readLine(text.slice(start, end), result);
    start = end + 1;
  }
  return result;
}

function readLine(line: string, result: BackendMetrics): void {
  const nameEnd = line.search(/[{\s]/);
  if (nameEnd < 0) return;
  const name = line.slice(0, nameEnd);
  const isKv = KV_NAMES.includes(name);
  if (!isKv && name !== WAITING_NAME) return;
  const valueStart = line.charCodeAt(nameEnd) === 0x7b /* { */ ? line.indexOf('}', nameEnd) + 1 : nameEnd;
  const value = Number.parseFloat(line.slice(valueStart).trim().split(/\s+/)[0] ?? '');
  if (!Number.isFinite(value)) return;
  if (isKv) result.kvCacheUsage = Math.max(result.kvCacheUsage ?? 0, Math.min(1, Math.max(0, value)));
  else result.waiting = (result.waiting ?? 0) + Math.max(0, Math.round(value));
}
