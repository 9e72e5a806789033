// The file-tool suite over @shears/tools-terminal's local sandbox backend.
import type { SandboxProviderV1 } from '@shears/core';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll } from 'vitest';
import { describeFileToolSuite } from './file-tool-suite.js';

let provider: SandboxProviderV1 | undefined;
afterAll(async () => {
  await provider?.close();
});

describeFileToolSuite(
  'the local sandbox backend',
  {
    acquire: async () => {
      provider ??= createLocalSandboxProvider();
      return provider.acquire();
    },
  },
  undefined,
  { race: true },
);
