/**
 * Two projects:
 * - unit: in-process tests of packages and app modules (fast), and of the repository as a whole (test/repo: the import
 *   graph).
 * - integration: real processes (edge, agent, sim, embedded llama.cpp) over loopback sockets,
 *   driven by the official SDKs. They run the compiled apps, so `npm run build` comes first.
 */
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json' }] },
  moduleNameMapper: {
    '^@iop/(core|proto|dialects|stream-gate|backend|backend-wire)$': '<rootDir>/packages/$1/src/index.ts',
    '^@iop/core/errors$': '<rootDir>/packages/core/src/errors.ts',
    '^@iop/test-support$': '<rootDir>/test/support/index.ts',
    '^@iop/agent$': '<rootDir>/apps/agent/src/index.ts',
    '^@iop/sim$': '<rootDir>/apps/sim/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

/** @type {import('jest').Config} */
module.exports = {
  // Integration suites start real processes; their hooks need more than jest's 5 s default.
  testTimeout: 60000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/packages/*/test/**/*.test.ts',
        '<rootDir>/apps/*/test/unit/**/*.test.ts',
        '<rootDir>/test/repo/**/*.test.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
  ],
};
