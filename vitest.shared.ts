// Shared vitest settings for every package: tests read TypeScript source through the
// `@shears/source` export condition, so `pnpm test` needs no build first.
import type { UserWorkspaceConfig } from 'vitest/config';

export const sourceConditions = ['@shears/source', 'import', 'module', 'node', 'default'];

export function sharedProject(name: string): UserWorkspaceConfig {
  return {
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: sourceConditions, externalConditions: ['@shears/source'] } },
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      // The whole-chain learning test runs on its own, after the rest (vitest.learn.config.ts).
      exclude: ['**/node_modules/**', 'src/**/*.learn.test.ts'],
      environment: 'node',
      testTimeout: 30_000,
      hookTimeout: 120_000,
    },
  };
}
