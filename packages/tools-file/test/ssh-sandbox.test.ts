// The file-tool suite over @shears/tools-terminal's ssh backend (the test sshd on 127.0.0.1
// started by @shears/test-infra).
import type { SandboxProviderV1 } from '@shears/core';
import { afterAll } from 'vitest';
import { createBackend } from './backends.js';
import { describeFileToolSuite } from './file-tool-suite.js';
import { sshInfra } from './infra.js';

const ssh = sshInfra();
let provider: SandboxProviderV1 | undefined;
afterAll(async () => {
  await provider?.close();
});

describeFileToolSuite(
  'the ssh sandbox backend',
  ssh.config
    ? {
        acquire: async () => {
          provider ??= await createBackend('ssh', {
            host: ssh.config!.host,
            port: ssh.config!.port,
            username: ssh.config!.user,
            privateKeyPath: ssh.config!.key,
            knownHostsPath: ssh.config!.knownHosts,
            root: '/tmp/shears-ssh-file-tools',
          });
          return provider.acquire();
        },
      }
    : undefined,
  ssh.reason,
  { race: true },
);
