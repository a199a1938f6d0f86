/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': '<rootDir>/test/support/strip-types.js' },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/e2e/**/*.e2e.ts'],
  // One pair of local control planes serves the whole run (see test/support/global-setup.ts).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
  // .local holds clusters' data (etcd's *.snap files are not jest snapshots) and build output.
  modulePathIgnorePatterns: ['<rootDir>/.local/', '<rootDir>/dist/'],
};
