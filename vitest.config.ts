import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*', 'examples/*'],
    reporters: ['default', './scripts/summary-reporter.ts'],
    globalSetup: ['./scripts/test-infra/global-setup.ts'],
  },
});
