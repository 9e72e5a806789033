// Containment: what a hostile or broken command does inside a docker sandbox stays inside it.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerSandboxProvider, type DockerSandboxProvider } from './docker-sandbox-provider.js';
import { describeDocker } from './test-docker-env.js';

describeDocker(describe, 'docker sandbox containment', (docker) => {
  let provider: DockerSandboxProvider;

  beforeAll(() => {
    provider = createDockerSandboxProvider({
      hosts: [docker.host],
      image: docker.image,
      limits: { memoryMb: 64, cpus: 0.5, pids: 48 },
      maxOutputBytes: 64 * 1024,
    });
  });
  afterAll(async () => {
    await provider.close();
  });

  /** A neighbour sandbox and the host must stay responsive while the hostile command runs. */
  async function expectNeighboursFine(neighbour: Awaited<ReturnType<DockerSandboxProvider['acquire']>>) {
    const result = await neighbour.exec('echo neighbour-ok');
    expect(result.stdout).toBe('neighbour-ok\n');
    expect(execFileSync('sh', ['-c', 'echo host-ok'], { encoding: 'utf8' })).toBe('host-ok\n');
  }

  it('stops a fork bomb at the pids limit; the timeout still kills it and the sandbox recovers', async () => {
    const [bombed, neighbour] = await Promise.all([provider.acquire(), provider.acquire()]);
    try {
      // The foreground wait is a shell loop, not `sleep`: at the pids limit `sleep` itself can fail
      // to start, and the command would end before the timeout it is here to test.
      const bomb = bombed.exec('bomb() { bomb | bomb & }; bomb; while :; do :; done', { timeoutMs: 2000 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await expectNeighboursFine(neighbour);
      const result = await bomb;
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).toBe(124);
      // Processes freed: the sandbox can fork again.
      const after = await bombed.exec('sleep 0.3; echo recovered');
      expect(after.stdout).toContain('recovered');
    } finally {
      await Promise.all([bombed.dispose(), neighbour.dispose()]);
    }
  });

  it('kills a memory hog at the memory limit without touching the sandbox shell', async () => {
    const [hog, neighbour] = await Promise.all([provider.acquire(), provider.acquire()]);
    try {
      // Holds ~256 MB in one process, four times the 64 MB limit: the kernel OOM-kills it.
      const result = await hog.exec('head -c 268435456 /dev/zero | sort > /dev/null; echo "sort=$?"', {
        timeoutMs: 20_000,
      });
      expect(result.timedOut).toBe(false);
      expect(result.stdout).toMatch(/sort=(137|1)\n/);
      expect(result.stdout).not.toContain('sort=0');
      await expectNeighboursFine(neighbour);
      expect((await hog.exec('echo still-here')).stdout).toBe('still-here\n');
    } finally {
      await Promise.all([hog.dispose(), neighbour.dispose()]);
    }
  });

  it('bounds an endless-output command: output capped, command killed at its timeout', async () => {
    const [noisy, neighbour] = await Promise.all([provider.acquire(), provider.acquire()]);
    try {
      const pending = noisy.exec('yes shears', { timeoutMs: 1500 });
      await expectNeighboursFine(neighbour);
      const result = await pending;
      expect(result.timedOut).toBe(true);
      expect(result.stdout.length).toBeLessThan(80 * 1024);
      expect(result.stdout).toContain('[OUTPUT TRUNCATED');
      expect(result.stdout.startsWith('shears\nshears\n')).toBe(true);
      const left = await noisy.exec('ps -o args | grep -c "^[y]es" || true');
      expect(left.stdout.trim()).toBe('0');
    } finally {
      await Promise.all([noisy.dispose(), neighbour.dispose()]);
    }
  });

  it('has no network by default: only loopback, and outbound connections fail', async () => {
    const sandbox = await provider.acquire();
    try {
      const links = await sandbox.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '");
      expect(links.stdout.trim()).toBe('lo');
      // 192.0.2.1 is TEST-NET-1 (never routed); with no interface the connect fails at once.
      const call = await sandbox.exec('echo ping | nc -w 3 192.0.2.1 80; echo "nc=$?"', {
        timeoutMs: 15_000,
      });
      expect(call.stdout).toMatch(/nc=[1-9]/);
      expect(call.stderr).toMatch(/network is unreachable/i);
    } finally {
      await sandbox.dispose();
    }
  });

  it('refuses host networking unless explicitly allowed', async () => {
    await expect(provider.acquire({ network: 'host' })).rejects.toThrow(/allowed: none, bridge/);
  });
});
