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
  // Three files at once on this machine's two cores: the integration files wait on servers (API
  // servers, S3 servers, outages, grace periods) far more than they compute. Measured here, one run
  // each: two workers 396 s, three 283 s (the CPU still 40% idle), four 249 s, but each file slower
  // under contention (file time 846 -> 991 s), so timed tests would run with less margin.
  maxWorkers: 3,
  // .local holds clusters' data (etcd's *.snap files are not jest snapshots) and build output.
  modulePathIgnorePatterns: ['<rootDir>/.local/', '<rootDir>/dist/'],
};
