/**
 * dependency-cruiser's settings for test/repo/import-cycles.test.ts: every TypeScript module of the repository,
 * resolved as the typecheck resolves it (tsconfig.test.json's paths), type-only imports included.
 */
module.exports = {
  forbidden: [{ name: 'no-circular', severity: 'error', from: {}, to: { circular: true } }],
  options: {
    doNotFollow: { path: '(^|/)node_modules/' },
    exclude: { path: '(^|/)(node_modules|dist|coverage)/' },
    includeOnly: { path: '\\.tsx?$' },
    // Imports that TypeScript erases (`import type`, type-only specifiers) count: a cycle of types is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
  },
};
