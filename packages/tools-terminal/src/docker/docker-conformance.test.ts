// The kernel's sandbox conformance suite, unchanged, against the docker backend (busybox image).
import { describeSandboxConformance } from '@shears/core/test';
import { createDockerSandboxProvider } from './docker-sandbox-provider.js';
import { testDocker } from './test-docker-env.js';

const docker = testDocker();
if (!docker)
  console.warn(
    '\n⚠️  SKIPPING docker sandbox conformance: no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)\n',
  );

describeSandboxConformance(
  'docker',
  () =>
    createDockerSandboxProvider({
      hosts: [docker!.host],
      image: docker!.image,
      limits: { memoryMb: 256, cpus: 1, pids: 256 },
    }),
  docker
    ? { testTimeoutMs: 60_000 }
    : { unavailable: 'no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)' },
);
