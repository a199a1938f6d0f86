/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': '<rootDir>/test/kit/strip-types.js' },
  testMatch: ['<rootDir>/test/**/*.test.ts', '<rootDir>/test/e2e/**/*.e2e.ts'],
  // One pair of local control planes serves the whole run (see test/kit/global-setup.ts).
  globalSetup: '<rootDir>/test/kit/global-setup.ts',
  globalTeardown: '<rootDir>/test/kit/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
  // .local holds clusters' data (etcd's *.snap files are not jest snapshots) and build output.
  modulePathIgnorePatterns: ['<rootDir>/.local/', '<rootDir>/dist/'],
};
