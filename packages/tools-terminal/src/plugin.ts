// The @shears/tools-terminal plugin manifest: the `local`, `ssh` and `docker` sandbox providers
// (ssh2 and dockerode are imported only when a provider connects), the `terminal` and `process`
// tools and the `terminal` toolset. Each entry declares its settings schema (the registry checks
// the user's settings with it) and each sandbox a `check()` that `shears doctor` runs.
import { definePlugin, definePluginEntry, probeSandboxProvider } from '@shears/core';
import { checkDockerSandbox } from './docker/docker-check.js';
import {
  createDockerSandboxProvider,
  dockerSandboxSettingsSchema,
} from './docker/docker-sandbox-provider.js';
import { createLocalSandboxProvider, localSandboxSettingsSchema } from './local/local-sandbox-provider.js';
import { createProcessTool, processToolSettingsSchema } from './process-tool.js';
import { checkSshSandbox } from './ssh/ssh-check.js';
import { createSshSandboxProvider, sshSandboxSettingsSchema } from './ssh/ssh-sandbox-provider.js';
import { createTerminalTool, terminalToolSettingsSchema } from './terminal-tool.js';

export default definePlugin({
  id: '@shears/tools-terminal',
  description: 'Sandboxes (local, docker, ssh) and the terminal/process tools',
  sandboxes: {
    local: definePluginEntry({
      settings: localSandboxSettingsSchema,
      create: (settings) => createLocalSandboxProvider(settings),
      check: async (settings, context) => [
        await probeSandboxProvider(() => createLocalSandboxProvider(settings), {
          id: 'local',
          fix: 'the local sandbox needs a writable temp directory and bash',
          signal: context.signal,
        }),
      ],
      description: 'A temp workspace on this machine; NOT isolated',
    }),
    ssh: definePluginEntry({
      settings: sshSandboxSettingsSchema,
      create: (settings) => createSshSandboxProvider(settings),
      check: checkSshSandbox,
      description: 'A working directory per sandbox on an SSH host (ssh2, host-key checked)',
    }),
    docker: definePluginEntry({
      settings: dockerSandboxSettingsSchema,
      create: (settings) => createDockerSandboxProvider(settings),
      check: checkDockerSandbox,
      description: 'One container per sandbox (dockerode), limits, no network by default',
    }),
  },
  tools: {
    terminal: definePluginEntry({
      settings: terminalToolSettingsSchema,
      create: (settings) => createTerminalTool(settings),
      description: 'Run shell commands in the sandbox',
    }),
    process: definePluginEntry({
      settings: processToolSettingsSchema,
      create: (settings) => createProcessTool(settings),
      description: 'Manage background processes',
    }),
  },
  toolsets: {
    terminal: { description: 'Shell commands and background processes', tools: ['terminal', 'process'] },
  },
});
