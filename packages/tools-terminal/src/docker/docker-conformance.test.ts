// The kernel's sandbox conformance suite, unchanged, against the docker backend (busybox image).
import { describeSandboxConformance } from '@shears/core/test';
import { describeTerminalTools } from '../../test/terminal-tools-suite.js';
import { createDockerSandboxProvider } from './docker-sandbox-provider.js';
import { testDocker } from './test-docker-env.js';

const docker = testDocker();
if (!docker)
  console.warn(
    '\n⚠️  SKIPPING docker sandbox conformance and terminal tools: no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)\n',
  );

const unavailable = 'no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)';
const makeProvider = () =>
  createDockerSandboxProvider({
    hosts: [docker!.host],
    image: docker!.image,
    limits: { memoryMb: 256, cpus: 1, pids: 256 },
  });

describeSandboxConformance('docker', makeProvider, docker ? { testTimeoutMs: 60_000 } : { unavailable });

// The terminal and process tools (foreground, background, poll, kill, exit codes) in a container.
describeTerminalTools('docker', makeProvider, docker ? {} : { unavailable });
