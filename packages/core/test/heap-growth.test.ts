import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { applyHeapGrowth, DEFAULT_HEAP_GROWTH_PERCENT, HEAP_GROWTH_PERCENT_SCHEMA } from '../src/heap-growth.js';

const CORE_DIST = path.resolve(__dirname, '../dist/index.js');

/**
 * A process that applies `percent`, then churns through objects that live long enough to be
 * promoted (150 000 of them alive at a time) and die after (a gateway's request state at
 * saturation), and prints the old generation's largest size, MiB.
 */
function oldSpacePeakMiB(percent: number, nodeArgs: string[] = []): number {
  const script = `
    const { applyHeapGrowth } = require(${JSON.stringify(CORE_DIST)});
    const v8 = require('node:v8');
    applyHeapGrowth(${percent});
    const ring = new Array(150000).fill(null);
    let peak = 0;
    for (let i = 0; i < 2000000; i++) {
      ring[i % ring.length] = { id: i, body: 'x'.repeat(200) + i, list: [i, i + 1, i + 2] };
      if (i % 10000 === 0) peak = Math.max(peak, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_size);
    }
    process.stdout.write(String(peak / 1048576));`;
  const result = spawnSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(result.stderr);
  return Number(result.stdout);
}

describe('applyHeapGrowth', () => {
  test('a lower growth collects promoted garbage sooner: a smaller old generation', () => {
    const wide = oldSpacePeakMiB(300);
    const tight = oldSpacePeakMiB(10);
    // Measured on Node 20 / 22 / 24: 264-283 / 285 / 324 MiB at 300 %, 93-101 / 94-98 / 146-147 MiB at 10 %.
    expect(tight).toBeLessThan(wide * 0.75);
    // A --heap-growing-percent given to node wins over the setting.
    expect(oldSpacePeakMiB(10, ['--heap-growing-percent=300'])).toBeGreaterThan(tight * 1.5);
  }, 60_000);

  test('leaves a command-line flag alone and refuses a percent out of range', () => {
    expect(applyHeapGrowth(30, ['--heap-growing-percent=80'])).toBeUndefined();
    expect(applyHeapGrowth(30, ['--heap_growing_percent', '80'])).toBeUndefined();
    expect(() => applyHeapGrowth(401, [])).toThrow(RangeError);
    expect(() => applyHeapGrowth(2.5, [])).toThrow('heapGrowthPercent must be an integer from 0 to 400, got 2.5');
  });

  test('the schema field: default 30, 0–400', () => {
    expect(DEFAULT_HEAP_GROWTH_PERCENT).toBe(30);
    expect(HEAP_GROWTH_PERCENT_SCHEMA).toMatchObject({ type: 'integer', minimum: 0, maximum: 400, default: 30 });
  });
});
