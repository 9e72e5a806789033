// Test infrastructure: a real OpenSSH server on a free loopback port for the ssh sandbox tests,
// with a freshly generated host key and a throwaway user key. Exposes SHEARS_TEST_SSH_HOST,
// _PORT, _USER, _KEY and _KNOWN_HOSTS. Under CI=true a failure to start throws; elsewhere
// (no root, no sshd) it warns loudly and the ssh tests skip.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

type Teardown = () => Promise<void>;

const SSHD = '/usr/sbin/sshd';

function fail(message: string): null {
  if (process.env.CI === 'true') throw new Error(`sshd test service: ${message}`);
  console.warn(`\n*** sshd test service NOT started: ${message}. SSH sandbox tests will be SKIPPED. ***\n`);
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

async function waitForBanner(port: number, deadlineMs: number): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('data', (chunk) => {
        socket.destroy();
        resolve(chunk.toString('utf8').startsWith('SSH-'));
      });
      socket.once('error', () => resolve(false));
      socket.setTimeout(1000, () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

export async function startSshService(): Promise<{ env: Record<string, string>; teardown: Teardown } | null> {
  if (process.env.SHEARS_TEST_SSH_HOST) return null; // provided from outside
  if (!existsSync(SSHD))
    return fail(`${SSHD} not found (install openssh-server, see scripts/provision-test.sh)`);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return fail('not running as root');
  const dir = await mkdtemp(join(tmpdir(), 'shears-sshd-'));
  let child: ChildProcess | undefined;
  const teardown: Teardown = async () => {
    if (child?.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const hostKey = join(dir, 'host_ed25519');
    const userKey = join(dir, 'user_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'shears-test-host', '-f', hostKey]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'shears-test-user', '-f', userKey]);
    const authorizedKeys = join(dir, 'authorized_keys');
    writeFileSync(authorizedKeys, readFileSync(`${userKey}.pub`), { mode: 0o600 });
    const port = await freePort();
    const knownHosts = join(dir, 'known_hosts');
    const [keyType, keyData] = readFileSync(`${hostKey}.pub`, 'utf8').trim().split(/\s+/);
    writeFileSync(knownHosts, `[127.0.0.1]:${port} ${keyType} ${keyData}\n`);
    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${hostKey}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${authorizedKeys}`,
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'StrictModes no',
        'UsePAM no',
        'MaxSessions 64',
        'MaxStartups 200:30:400',
        'Subsystem sftp internal-sftp',
        'LogLevel ERROR',
        '',
      ].join('\n'),
    );
    mkdirSync('/run/sshd', { recursive: true });
    child = spawn(SSHD, ['-D', '-e', '-f', config], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
    const up = await Promise.race([waitForBanner(port, 10_000), exited.then(() => false)]);
    if (!up) {
      await teardown();
      return fail(`sshd did not come up on 127.0.0.1:${port}: ${stderr.trim() || 'no output'}`);
    }
    child.unref();
    return {
      env: {
        SHEARS_TEST_SSH_HOST: '127.0.0.1',
        SHEARS_TEST_SSH_PORT: String(port),
        SHEARS_TEST_SSH_USER: userInfo().username,
        SHEARS_TEST_SSH_KEY: userKey,
        SHEARS_TEST_SSH_KNOWN_HOSTS: knownHosts,
      },
      teardown,
    };
  } catch (error) {
    await teardown();
    return fail((error as Error).message);
  }
}
