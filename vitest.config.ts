import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Examples are tested from the packages that load them (core loads hello-pack, envs-swe the SWE pack).
    projects: ['packages/*'],
    reporters: ['default', './scripts/summary-reporter.ts'],
    globalSetup: ['./scripts/test-infra/global-setup.ts'],
  },
});
