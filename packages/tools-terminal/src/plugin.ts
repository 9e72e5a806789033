// The @shears/tools-terminal plugin manifest: the `local`, `ssh` and `docker` sandbox providers
// (ssh2 and dockerode are imported only when their provider is created), the `terminal` and
// `process` tools and the `terminal` toolset.
import { definePlugin } from '@shears/core';
import { createLocalSandboxProvider } from './local/local-sandbox-provider.js';
import { createProcessTool } from './process-tool.js';
import { createTerminalTool } from './terminal-tool.js';

export default definePlugin({
  id: '@shears/tools-terminal',
  description: 'Sandboxes (local, docker, ssh) and the terminal/process tools',
  sandboxes: {
    local: {
      create: (settings) => createLocalSandboxProvider(settings),
      description: 'A temp workspace on this machine; NOT isolated',
    },
    ssh: {
      create: async (settings) =>
        (await import('./ssh/ssh-sandbox-provider.js')).createSshSandboxProvider(settings),
      description: 'A working directory per sandbox on an SSH host (ssh2, host-key checked)',
    },
    docker: {
      create: async (settings) =>
        (await import('./docker/docker-sandbox-provider.js')).createDockerSandboxProvider(settings as never),
      description: 'One container per sandbox (dockerode), limits, no network by default',
    },
  },
  tools: {
    terminal: {
      create: (settings) => createTerminalTool(settings),
      description: 'Run shell commands in the sandbox',
    },
    process: {
      create: (settings) => createProcessTool(settings),
      description: 'Manage background processes',
    },
  },
  toolsets: {
    terminal: { description: 'Shell commands and background processes', tools: ['terminal', 'process'] },
  },
});
