import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { SandboxError } from '@shears/core';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTerminalTool } from '../terminal-tool.js';
import { resolveDockerConnection } from './docker-hosts.js';
import type { DockerSandbox } from './docker-sandbox.js';
import {
  createDockerSandboxProvider,
  type DockerSandboxProvider,
  LABELS,
} from './docker-sandbox-provider.js';
import { describeDocker } from './test-docker-env.js';

describeDocker(describe, 'docker sandbox provider', (docker) => {
  let provider: DockerSandboxProvider;
  const client = new Dockerode(resolveDockerConnection(docker.host) as Dockerode.DockerOptions);

  beforeAll(() => {
    provider = createDockerSandboxProvider({
      hosts: [docker.host],
      image: docker.image,
      limits: { memoryMb: 128, cpus: 0.5, pids: 64 },
    });
  });
  afterAll(async () => {
    await provider.close();
  });

  it('runs commands in a persistent shell: exit codes, stdout/stderr, cwd and env persist', async () => {
    const sandbox = await provider.acquire({ env: { GREETING: 'hi there' } });
    try {
      expect(sandbox.backend).toBe('docker');
      expect(sandbox.isolated).toBe(true);
      const first = await sandbox.exec('echo "$GREETING"; echo oops >&2; exit 3');
      expect(first).toMatchObject({ exitCode: 3, stdout: 'hi there\n', stderr: 'oops\n', timedOut: false });
      expect(first.output).toContain('hi there');
      await sandbox.exec('mkdir -p sub && cd sub && export COLOR=blue');
      const second = await sandbox.exec('pwd; echo $COLOR');
      expect(second.stdout).toBe(`${sandbox.workdir}/sub\nblue\n`);
      const scoped = await sandbox.exec('pwd; echo $ONLY', { cwd: '/tmp', env: { ONLY: 'once' } });
      expect(scoped.stdout).toBe('/tmp\nonce\n');
      const after = await sandbox.exec('pwd; echo "[$ONLY]"');
      expect(after.stdout).toBe(`${sandbox.workdir}/sub\n[]\n`);
      const withInput = await sandbox.exec('cat | wc -c', { stdin: 'abcdef' });
      expect(withInput.stdout.trim()).toBe('6');
    } finally {
      await sandbox.dispose();
    }
  });

  it('times out a command and kills its children, then keeps working', async () => {
    const sandbox = await provider.acquire();
    try {
      const result = await sandbox.exec('(sleep 30; echo child-survived > /tmp/leak) & sleep 30', {
        timeoutMs: 500,
      });
      expect(result.exitCode).toBe(124);
      expect(result.timedOut).toBe(true);
      const check = await sandbox.exec(
        'sleep 0.2; ps -o pid,args | grep -c "[s]leep 30"; cat /tmp/leak 2>/dev/null || echo none',
      );
      expect(check.stdout).toBe('0\nnone\n');
    } finally {
      await sandbox.dispose();
    }
  });

  it('cancels a command through its AbortSignal (exit 130) and keeps the sandbox usable', async () => {
    const sandbox = await provider.acquire();
    try {
      const controller = new AbortController();
      const pending = sandbox.exec('sleep 30', { signal: controller.signal });
      setTimeout(() => controller.abort(), 300);
      const result = await pending;
      expect(result.exitCode).toBe(130);
      expect((await sandbox.exec('echo after')).stdout).toBe('after\n');
    } finally {
      await sandbox.dispose();
    }
  });

  it('round-trips files through the archive API (binary, nested dirs, relative paths)', async () => {
    const sandbox = await provider.acquire();
    try {
      const bytes = new Uint8Array(randomBytes(1024 * 1024));
      await sandbox.writeFile('deep/nested/blob.bin', bytes);
      const back = await sandbox.readFile(`${sandbox.workdir}/deep/nested/blob.bin`);
      expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
      const size = await sandbox.exec('wc -c < deep/nested/blob.bin');
      expect(size.stdout.trim()).toBe(String(bytes.length));
      await sandbox.exec('echo linked > target.txt && ln -s target.txt link.txt');
      expect(new TextDecoder().decode(await sandbox.readFile('link.txt'))).toBe('linked\n');
      const longName = `${'d'.repeat(120)}/${'f'.repeat(120)}.txt`;
      await sandbox.writeFile(longName, 'long');
      expect(new TextDecoder().decode(await sandbox.readFile(longName))).toBe('long');
      await expect(sandbox.readFile('missing.txt')).rejects.toThrow(/missing\.txt/);
    } finally {
      await sandbox.dispose();
    }
  });

  it('labels containers, locks them down and removes them on dispose (twice is harmless)', async () => {
    const sandbox = await provider.acquire();
    const containers = await client.listContainers({
      filters: { label: [`${LABELS.sandboxId}=${sandbox.id}`] },
    });
    expect(containers).toHaveLength(1);
    const info = await client.getContainer(containers[0]!.Id).inspect();
    expect(info.Config.Labels).toMatchObject({
      [LABELS.managed]: 'true',
      [LABELS.ownerPid]: String(process.pid),
    });
    expect(info.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ['ALL'],
      NetworkMode: 'none',
      PidsLimit: 64,
      Memory: 128 * 1024 * 1024,
    });
    expect(info.HostConfig.SecurityOpt).toContain('no-new-privileges');
    await sandbox.dispose();
    await sandbox.dispose();
    expect(
      await client.listContainers({ all: true, filters: { label: [`${LABELS.sandboxId}=${sandbox.id}`] } }),
    ).toHaveLength(0);
    await expect(sandbox.exec('true')).rejects.toSatisfy(SandboxError.isInstance);
  });

  it('keeps a warm pool per image, refills it in the background and drains it on close', async () => {
    const run = randomBytes(4).toString('hex');
    const pooled = createDockerSandboxProvider({
      hosts: [docker.host],
      image: docker.image,
      poolSize: 2,
      labels: { 'shears.test.run': run },
    });
    const count = async () =>
      (await client.listContainers({ all: true, filters: { label: [`shears.test.run=${run}`] } })).length;
    try {
      await pooled.warm();
      expect(await count()).toBe(2);
      const sandbox = await pooled.acquire({ env: { FROM_SPEC: 'yes' } });
      expect((await sandbox.exec('echo $FROM_SPEC')).stdout).toBe('yes\n');
      await pooled.warm();
      expect(await count()).toBe(3);
      await sandbox.dispose();
      expect(await count()).toBe(2);
    } finally {
      await pooled.close();
    }
    expect(await count()).toBe(0);
  });

  it('spreads sandboxes over several hosts by weight', async () => {
    const socketPath = docker.host.replace(/^unix:\/\//, '');
    const spread = createDockerSandboxProvider({
      hosts: [docker.host, { url: socketPath, weight: 2 }],
      image: docker.image,
    });
    try {
      const sandboxes = (await Promise.all(
        Array.from({ length: 6 }, () => spread.acquire()),
      )) as DockerSandbox[];
      const onSecond = sandboxes.filter((sandbox) => sandbox.hostUrl === socketPath).length;
      expect(onSecond).toBe(4);
      expect((await sandboxes[0]!.exec('echo ok')).stdout).toBe('ok\n');
    } finally {
      await spread.close();
    }
  });

  it('skips a Docker host that cannot be reached', async () => {
    const failover = createDockerSandboxProvider({
      hosts: ['unix:///nonexistent/shears-docker.sock', docker.host],
      image: docker.image,
    });
    try {
      const sandbox = (await failover.acquire()) as DockerSandbox;
      expect(sandbox.hostUrl).toBe(docker.host);
      expect((await sandbox.exec('echo ok')).stdout).toBe('ok\n');
    } finally {
      await failover.close();
    }
  });

  it('the terminal tool answers at once, without retrying, when the container is killed mid-command', async () => {
    const sandbox = (await provider.acquire()) as DockerSandbox;
    try {
      // Retries ten minutes apart: a retry would outlast the test's timeout.
      const terminal = createTerminalTool({ retryDelaysMs: [600_000] });
      const answer = terminal.execute(
        { command: 'touch /tmp/started; sleep 120' },
        {
          sandbox,
          taskId: 'kill',
          rolloutId: 'kill',
          signal: new AbortController().signal,
          logger: { debug() {}, info() {}, warn() {}, error() {} },
          state: new Map(),
        },
      );
      for (;;) {
        const started = await sandbox.readFile('/tmp/started').then(
          () => true,
          () => false,
        );
        if (started) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await client.getContainer(sandbox.container.id).kill();
      const result = await answer;
      const content = typeof result === 'string' ? result : result.content;
      expect(content).toContain('container is gone');
      expect(sandbox.alive).toBe(false);
    } finally {
      await sandbox.dispose();
    }
  });

  it('reaps containers of dead owner processes at start-up and idle sandboxes', async () => {
    const hostId = `reaper-test-${randomBytes(4).toString('hex')}`;
    const deadPid = await new Promise<number>((resolve) => {
      const child = spawn('true');
      child.on('exit', () => resolve(child.pid as number));
    });
    const labels = (pid: number) => ({
      [LABELS.managed]: 'true',
      [LABELS.hostId]: hostId,
      [LABELS.ownerPid]: String(pid),
    });
    const orphan = await client.createContainer({
      Image: docker.image,
      Cmd: ['sleep', '600'],
      Labels: labels(deadPid),
      HostConfig: { NetworkMode: 'none' },
    });
    const living = await client.createContainer({
      Image: docker.image,
      Cmd: ['sleep', '600'],
      Labels: labels(process.pid),
      HostConfig: { NetworkMode: 'none' },
    });
    const reaping = createDockerSandboxProvider({
      hosts: [docker.host],
      image: docker.image,
      hostId,
      idleTimeoutMs: 1,
    });
    try {
      const sandbox = await reaping.acquire();
      await expect(orphan.inspect()).rejects.toMatchObject({ statusCode: 404 });
      expect((await living.inspect()).Id).toBe(living.id);
      await new Promise((resolve) => setTimeout(resolve, 20));
      // A command running longer than the idle timeout keeps its sandbox: busy is not idle.
      const running = sandbox.exec('sleep 1; echo finished');
      await reaping.reap();
      expect(reaping.activeCount).toBe(1);
      expect((await running).stdout).toBe('finished\n');
      await new Promise((resolve) => setTimeout(resolve, 20));
      // Now idle: reaped (by this call, or by the provider's own reaper a moment earlier).
      await reaping.reap();
      await expect(sandbox.exec('true')).rejects.toThrow(/reaper/);
      expect(reaping.activeCount).toBe(0);
    } finally {
      await reaping.close();
      await living.remove({ force: true });
    }
  });
});

describe('docker sandbox settings', () => {
  it('rejects bad settings with the offending field named, before touching Docker', () => {
    expect(() => createDockerSandboxProvider({ poolSize: -1 })).toThrow(/"poolSize"/);
    expect(() => createDockerSandboxProvider({ network: 'host' as never })).toThrow(/"network"/);
    expect(() => createDockerSandboxProvider({ workdir: 'relative' })).toThrow(/"workdir"/);
    expect(() => createDockerSandboxProvider({ binds: ['relative:/run/x'] })).toThrow(
      /"binds\.0".*"\/host\/path:\/container\/path"/,
    );
    expect(() => createDockerSandboxProvider({ binds: ['/a:/b:rx'] })).toThrow(/"binds\.0"/);
    expect(() =>
      createDockerSandboxProvider({ binds: ['/run/shears-gateway:/run/shears-gateway:ro'] }),
    ).not.toThrow();
    expect(() => createDockerSandboxProvider({ hosts: ['docker.example:2375'] })).toThrow(
      /unsupported scheme "docker\.example:"/,
    );
  });
});
