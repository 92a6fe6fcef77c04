/**
 * Reads Prometheus text exposition (the edge's `GET /metrics`) into samples, and works out what a
 * histogram saw between two scrapes: count, sum and bucket-bounded percentiles.
 */
import { request } from 'undici';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the text format (comments skipped; label values unescaped only for `\"` and `\\`). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL)) labels[label[1]!] = label[2]!.replace(/\\(["\\])/g, '$1');
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** GET `<origin>/metrics`, parsed. */
export async function scrapeMetrics(origin: string): Promise<Sample[]> {
  const response = await request(`${origin}/metrics`);
  return parseMetrics(await response.body.text());
}

/** Sum of `name` over every sample whose labels include `labels`. */
export function sumOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const sample of samples) {
    if (sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
      sum += sample.value;
  }
  return sum;
}

export interface HistogramDelta {
  count: number;
  sum: number;
  /** Cumulative counts by upper bound (`le`), ascending; `+Inf` last. */
  buckets: Array<{ le: number; count: number }>;
}

/** What histogram `name` (all label sets together) observed between scrapes `before` and `after`. */
export function histogramDelta(before: readonly Sample[], after: readonly Sample[], name: string): HistogramDelta {
  const bounds = new Set<string>();
  for (const sample of after)
    if (sample.name === `${name}_bucket` && sample.labels.le !== undefined) bounds.add(sample.labels.le);
  const buckets = [...bounds]
    .map((le) => ({
      le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le),
      count: sumOf(after, `${name}_bucket`, { le }) - sumOf(before, `${name}_bucket`, { le }),
    }))
    .sort((a, b) => a.le - b.le);
  return {
    count: sumOf(after, `${name}_count`) - sumOf(before, `${name}_count`),
    sum: sumOf(after, `${name}_sum`) - sumOf(before, `${name}_sum`),
    buckets,
  };
}

/** The upper bound of the bucket holding the p-th percentile (NaN when nothing was observed). */
export function bucketPercentile(histogram: HistogramDelta, p: number): number {
  if (histogram.count === 0) return Number.NaN;
  const rank = (p / 100) * histogram.count;
  return histogram.buckets.find((bucket) => bucket.count >= rank)?.le ?? Number.NaN;
}
