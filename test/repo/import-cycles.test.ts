/**
 * No import cycles (docs/architecture.md; the project's rule "no import cycles"): no module of the repository's
 * TypeScript sources and tests reaches itself through its imports, type-only imports included, and no two folders of
 * apps/edge/src import each other (a folder is one concept; the one below must not know the one above).
 *
 * The graph is dependency-cruiser's (a pinned devDependency), run as its command so that jest needs no ESM support.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');

interface CruiseDependency {
  resolved: string;
  dependencyTypes: string[];
}
interface CruiseModule {
  source: string;
  dependencies: CruiseDependency[];
}
interface CruiseViolation {
  from: string;
  to: string;
  rule: { name: string };
  cycle?: Array<{ name: string } | string>;
}
interface CruiseResult {
  modules: CruiseModule[];
  summary: { violations: CruiseViolation[]; totalCruised: number };
}

function cruise(): CruiseResult {
  const output = execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'),
      '--config',
      'test/repo/dependency-cruiser.cjs',
      '--output-type',
      'json',
      '--no-progress',
      'apps',
      'packages',
      'test',
    ],
    { cwd: ROOT, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' },
  );
  return JSON.parse(output) as CruiseResult;
}

/** `a <-> b` for each pair of apps/edge/src folders with imports both ways, names sorted. */
function edgeFolderPairs(modules: readonly CruiseModule[]): string[] {
  const folderOf = (path: string): string | undefined => /^apps\/edge\/src\/([^/]+)\//.exec(path)?.[1];
  const edges = new Set<string>();
  for (const module of modules) {
    const from = folderOf(module.source);
    if (from === undefined) continue;
    for (const dependency of module.dependencies) {
      const to = folderOf(dependency.resolved);
      if (to !== undefined && to !== from) edges.add(`${from} ${to}`);
    }
  }
  const pairs: string[] = [];
  for (const edge of edges) {
    const [a, b] = edge.split(' ') as [string, string];
    if (a < b && edges.has(`${b} ${a}`)) pairs.push(`${a} <-> ${b}`);
  }
  return pairs.sort();
}

describe('import graph', () => {
  let result: CruiseResult;
  beforeAll(() => {
    result = cruise();
  }, 180_000);

  it('covers the sources and tests, type-only imports included', () => {
    const sources = result.modules.map((module) => module.source);
    expect(sources).toEqual(
      expect.arrayContaining([
        'apps/edge/src/main.ts',
        'apps/agent/src/main.ts',
        'packages/core/src/index.ts',
        'test/repo/import-cycles.test.ts',
      ]),
    );
    expect(sources.length).toBeGreaterThan(500);
    const typeOnly = result.modules.flatMap((module) =>
      module.dependencies.filter((dependency) => dependency.dependencyTypes.includes('type-only')),
    );
    expect(typeOnly.length).toBeGreaterThan(100);
  });

  it('has no import cycle', () => {
    const cycles = result.summary.violations
      .filter((violation) => violation.rule.name === 'no-circular')
      .map((violation) =>
        [violation.from, ...(violation.cycle ?? []).map((step) => (typeof step === 'string' ? step : step.name))].join(
          ' -> ',
        ),
      );
    expect(cycles).toEqual([]);
  });

  it('has no two folders of apps/edge/src importing each other', () => {
    expect(edgeFolderPairs(result.modules)).toEqual([]);
  });
});

describe('edgeFolderPairs', () => {
  const module = (source: string, ...resolved: string[]): CruiseModule => ({
    source,
    dependencies: resolved.map((path) => ({ resolved: path, dependencyTypes: ['local'] })),
  });

  it('names folders that import each other, and only those', () => {
    const modules = [
      module('apps/edge/src/keys/a.ts', 'apps/edge/src/limits/b.ts', 'apps/edge/src/storage/c.ts'),
      module('apps/edge/src/limits/b.ts', 'apps/edge/src/keys/d.ts', 'apps/edge/src/limits/e.ts'),
      module('apps/edge/src/storage/c.ts', 'packages/core/src/index.ts'),
      module('apps/edge/src/routes.ts', 'apps/edge/src/keys/a.ts'),
    ];
    expect(edgeFolderPairs(modules)).toEqual(['keys <-> limits']);
  });
});
