// The tests that train on the CPU, run by `pnpm test:learn` as their own step of `pnpm test`,
// after `vitest run`, one file after another: the whole-chain learning test
// (packages/cli/src/train-learns.learn.test.ts: two policies trained, what they learnt measured)
// and the training guides run as written (packages/cli/src/train-guides.learn.test.ts: SFT and
// GRPO of the toy). They run alone rather than beside the other test files (in one CI run that
// shared the machine with them, the learning test took 28 min of vitest; the guides' SFT took
// 9-10 min at a load average of 40-78). They need no Docker or sshd (local sandbox), so no global
// set-up.
import { defineConfig } from 'vitest/config';
import { sourceConditions } from './vitest.shared.js';

export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@shears/source'] } },
  test: {
    include: ['packages/*/src/**/*.learn.test.ts'],
    environment: 'node',
    fileParallelism: false,
    reporters: ['default'],
  },
});
