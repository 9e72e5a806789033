// The whole-chain learning test (packages/cli/src/train-learns.learn.test.ts), run by `pnpm
// test:learn` as its own step of `pnpm test`, after `vitest run`: it trains two policies on the
// CPU and measures what they learnt, so it runs alone rather than beside the other test files
// (in one CI run that shared the machine with them, it took 28 min of vitest). It needs no Docker
// or sshd (local sandbox), so no global set-up.
import { defineConfig } from 'vitest/config';
import { sourceConditions } from './vitest.shared.js';

export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@shears/source'] } },
  test: {
    include: ['packages/*/src/**/*.learn.test.ts'],
    environment: 'node',
    reporters: ['default'],
  },
});
