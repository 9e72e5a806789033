import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxV1 } from '@shears/core';
import { describeSandboxConformance } from '@shears/core/test';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { describeTerminalTools } from '../../test/terminal-tools-suite.js';
import type { SshSandboxSettings } from './ssh-sandbox-provider.js';
import { createSshSandboxProvider, sshFingerprint } from './ssh-sandbox-provider.js';

const env = process.env;
const available = Boolean(env.SHEARS_TEST_SSH_HOST && env.SHEARS_TEST_SSH_PORT && env.SHEARS_TEST_SSH_KEY);
if (!available && env.CI === 'true') {
  throw new Error(
    'SSH tests must run under CI=true, but the sshd test service did not start (see packages/test-infra/src/sshd.ts)',
  );
}
const unavailable = available
  ? undefined
  : 'no sshd test service (needs root and openssh-server; see packages/test-infra/src/sshd.ts)';

function settings(overrides: Partial<SshSandboxSettings> = {}): SshSandboxSettings {
  return {
    host: env.SHEARS_TEST_SSH_HOST ?? '127.0.0.1',
    port: Number(env.SHEARS_TEST_SSH_PORT ?? 22),
    username: env.SHEARS_TEST_SSH_USER ?? 'root',
    privateKeyPath: env.SHEARS_TEST_SSH_KEY,
    knownHostsPath: env.SHEARS_TEST_SSH_KNOWN_HOSTS,
    root: '/tmp/shears-ssh-test',
    ...overrides,
  };
}

describeSandboxConformance('ssh', () => createSshSandboxProvider(settings()), { unavailable });
describeTerminalTools('ssh', () => createSshSandboxProvider(settings()), { unavailable });

describe.skipIf(!available)('createSshSandboxProvider', () => {
  const provider = createSshSandboxProvider(settings());
  let sandbox: SandboxV1 | undefined;
  afterEach(async () => {
    await sandbox?.dispose();
    sandbox = undefined;
  });
  afterAll(async () => {
    await provider.close();
  });

  it('reconnects after the connection is killed and starts again in the workdir', async () => {
    sandbox = await provider.acquire();
    await sandbox.exec('mkdir -p inner && cd inner');
    // The shell's parent is the sshd process serving this connection: killing it drops the link.
    await sandbox.exec('kill -KILL $PPID').catch(() => undefined);
    const result = await sandbox.exec('pwd; echo $SHEARS_SANDBOX_ID');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`${sandbox.workdir}\n${sandbox.id}\n`);
    await sandbox.writeFile('after-reconnect.txt', 'sftp works');
    expect(new TextDecoder().decode(await sandbox.readFile('after-reconnect.txt'))).toBe('sftp works');
  });

  it('removes the working directory and kills leftover processes on dispose', async () => {
    const other = await provider.acquire();
    await other.exec('setsid sleep 300 > /dev/null 2>&1 &');
    const workdir = other.workdir;
    await other.dispose();
    sandbox = await provider.acquire();
    expect((await sandbox.exec(`test -e ${workdir} && echo exists || echo removed`)).stdout).toBe(
      'removed\n',
    );
    expect(
      (
        await sandbox.exec(`grep -lzx SHEARS_SANDBOX_ID=${other.id} /proc/[0-9]*/environ 2>/dev/null | wc -l`)
      ).stdout.trim(),
    ).toBe('0');
  });

  it('accepts a pinned fingerprint and refuses a wrong one with a clear error', async () => {
    const line = readFileSync(env.SHEARS_TEST_SSH_KNOWN_HOSTS!, 'utf8').trim().split(/\s+/);
    const fingerprint = sshFingerprint(Buffer.from(line[2]!, 'base64'));
    const pinned = createSshSandboxProvider(
      settings({ knownHostsPath: undefined, hostKeyFingerprint: fingerprint }),
    );
    sandbox = await pinned.acquire();
    expect((await sandbox.exec('echo pinned')).stdout).toBe('pinned\n');
    const wrong = createSshSandboxProvider(
      settings({
        knownHostsPath: undefined,
        hostKeyFingerprint: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      }),
    );
    await expect(wrong.acquire()).rejects.toThrow(
      /host key verification failed .*presented SHA256:.*pinned fingerprint is SHA256:AAAA/,
    );
  });

  it('refuses a host whose key does not match known_hosts', async () => {
    const path = join(tmpdir(), `shears-known-hosts-${process.pid}`);
    const [hostPattern] = readFileSync(env.SHEARS_TEST_SSH_KNOWN_HOSTS!, 'utf8').trim().split(/\s+/);
    // A different (valid) ed25519 key for the same host.
    writeFileSync(
      path,
      `${hostPattern} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n`,
    );
    const mismatched = createSshSandboxProvider(settings({ knownHostsPath: path }));
    await expect(mismatched.acquire()).rejects.toThrow(
      /host key verification failed.*does not match the key for \[127\.0\.0\.1\]:\d+/,
    );
    writeFileSync(path, '');
    await expect(createSshSandboxProvider(settings({ knownHostsPath: path })).acquire()).rejects.toThrow(
      /has no entry for \[127\.0\.0\.1\]/,
    );
  });

  it('authenticates through a real ssh-agent holding the key', async () => {
    const socket = join(tmpdir(), `shears-agent-${process.pid}.sock`);
    const agent = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    try {
      for (let attempt = 0; attempt < 50 && !existsSync(socket); attempt += 1)
        await new Promise((resolve) => setTimeout(resolve, 50));
      execFileSync('ssh-add', ['-q', env.SHEARS_TEST_SSH_KEY!], {
        env: { ...process.env, SSH_AUTH_SOCK: socket },
      });
      const viaAgent = createSshSandboxProvider(settings({ privateKeyPath: undefined, agent: socket }));
      sandbox = await viaAgent.acquire();
      expect((await sandbox.exec('echo agent')).stdout).toBe('agent\n');
    } finally {
      agent.kill();
    }
  });

  it('rejects settings without credentials or with unknown keys', async () => {
    await expect(createSshSandboxProvider(settings({ privateKeyPath: undefined })).acquire()).rejects.toThrow(
      /no credentials/,
    );
    expect(() => createSshSandboxProvider({ ...settings(), hots: 'x' })).toThrow(
      /keys: host, port, username/,
    );
  });
});
