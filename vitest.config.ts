import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration files start their own processes; two cores do not gain from more.
    maxWorkers: 2,
    globalSetup: ['test/harness/globalSetup.ts'],
  },
});
