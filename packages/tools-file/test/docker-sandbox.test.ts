// The file-tool suite over @shears/tools-terminal's docker backend (a busybox image: no
// ripgrep, no GNU tools, so the fallbacks are what runs).
import type { SandboxProviderV1 } from '@shears/core';
import { afterAll } from 'vitest';
import { createBackend } from './backends.js';
import { describeFileToolSuite } from './file-tool-suite.js';
import { dockerInfra } from './infra.js';

const docker = dockerInfra();
let provider: SandboxProviderV1 | undefined;
afterAll(async () => {
  await provider?.close();
});

describeFileToolSuite(
  'the docker sandbox backend',
  docker.config
    ? {
        acquire: async () => {
          provider ??= await createBackend('docker', {
            hosts: [docker.config!.host],
            image: docker.config!.image,
          });
          return provider.acquire();
        },
      }
    : undefined,
  docker.reason,
  { race: true },
);
