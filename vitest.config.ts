import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Examples are tested from the packages that load them (core loads hello-pack, envs-swe the SWE
    // pack); @shears/test-infra has no tests of its own: it is what the others run against.
    projects: ['packages/*', '!packages/test-infra'],
    reporters: ['default', './scripts/summary-reporter.ts'],
    globalSetup: ['./packages/test-infra/src/global-setup.ts'],
  },
});
