import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { SandboxV1 } from '@shears/core';
import { describeSandboxConformance } from '@shears/core/test';
import { afterEach, describe, expect, it } from 'vitest';
import type { LocalSandbox } from './local-sandbox-provider.js';
import { createLocalSandboxProvider } from './local-sandbox-provider.js';

/** The pids of the processes whose environment carries `SHEARS_SANDBOX_ID=<id>`. */
function processesOf(sandboxId: string): number[] {
  const needle = Buffer.from(`\0SHEARS_SANDBOX_ID=${sandboxId}\0`);
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${entry}/environ`)]).includes(needle))
        pids.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

/** Read system calls this process made so far (all its threads, libuv's pool included). */
function readCalls(): number {
  return Number(/syscr: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
}

describeSandboxConformance('local', () => createLocalSandboxProvider());

describe('createLocalSandboxProvider', () => {
  const provider = createLocalSandboxProvider({ env: { FROM_SETTINGS: 'yes' } });
  let sandbox: SandboxV1 | undefined;
  afterEach(async () => {
    await sandbox?.dispose();
  });

  it('declares itself not isolated and keeps host secrets out of the environment', async () => {
    process.env.SHEARS_TEST_SECRET_KEY = 'sk-should-not-leak';
    sandbox = await provider.acquire({ env: { FROM_SPEC: '1' } });
    expect(sandbox.isolated).toBe(false);
    expect(sandbox.backend).toBe('local');
    const result = await sandbox.exec('echo "$FROM_SETTINGS $FROM_SPEC [$SHEARS_TEST_SECRET_KEY]"');
    expect(result.stdout).toBe('yes 1 []\n');
    delete process.env.SHEARS_TEST_SECRET_KEY;
  });

  it('removes the workspace and kills leftover background processes on dispose', async () => {
    sandbox = await provider.acquire();
    const pid = Number((await sandbox.exec('setsid sleep 300 > /dev/null 2>&1 & echo $!')).stdout);
    const root = sandbox.workdir;
    expect(existsSync(root)).toBe(true);
    await sandbox.dispose();
    expect(existsSync(root)).toBe(false);
    let state = '';
    try {
      state = (await import('node:fs')).readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] ?? '';
    } catch {}
    expect(['', 'Z']).toContain(state);
  });

  it('releases sandboxes together in one shared /proc scan: each kills its own processes, none of a live sandbox', async () => {
    const state = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] ?? '';
      } catch {
        return '';
      }
    };
    const released = await Promise.all(Array.from({ length: 12 }, () => provider.acquire()));
    const kept = await provider.acquire();
    sandbox = kept;
    const background = 'setsid sleep 300 > /dev/null 2>&1 & echo $!';
    const pids = await Promise.all(released.map(async (box) => Number((await box.exec(background)).stdout)));
    const keptPid = Number((await kept.exec(background)).stdout);
    // Released in two waves: the second asks while the first's scan may be running.
    const first = Promise.all(released.slice(0, 6).map((box) => box.dispose()));
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([first, ...released.slice(6).map((box) => box.dispose())]);
    for (const pid of pids) expect(['', 'Z']).toContain(state(pid));
    expect(['S', 'R']).toContain(state(keptPid));
    await kept.dispose();
    expect(['', 'Z']).toContain(state(keptPid));
  });

  it('writes and reads files without a shell; the shell starts with the first command, which sees them', async () => {
    const local = (await provider.acquire()) as LocalSandbox;
    sandbox = local;
    await local.writeFile('data/words.txt', 'one two three\n');
    expect(Buffer.from(await local.readFile('data/words.txt')).toString()).toBe('one two three\n');
    expect(local.sessionsOpened).toBe(0);
    expect(processesOf(local.id)).toEqual([]);
    const result = await local.exec('wc -w < data/words.txt; echo $$');
    const [words, shellPid] = result.stdout.trim().split('\n').map(Number);
    expect(words).toBe(3);
    expect(local.sessionsOpened).toBe(1);
    expect(processesOf(local.id)).toContain(shellPid);
    await local.dispose();
    expect(processesOf(local.id)).toEqual([]);
    expect(existsSync(local.root)).toBe(false);
  });

  it('starts bash with nothing of its own in the temp dir (its state lives beside the workspace)', async () => {
    sandbox = await provider.acquire();
    const result = await sandbox.exec('echo "$0 ${BASH_VERSION:+bash}"; ls -A "$TMPDIR"');
    expect(result.stdout).toBe('bash bash\n');
    await sandbox.exec('cd /; export KEPT=1');
    expect((await sandbox.exec('pwd; echo $KEPT')).stdout).toBe('/\n1\n');
  });

  it('disposes a sandbox that never ran a command without reading the process table', async () => {
    // Another sandbox's shell runs meanwhile: the unused ones must not scan /proc on its account.
    const busy = await provider.acquire();
    sandbox = busy;
    await busy.exec('true');
    const unused = (await Promise.all(Array.from({ length: 8 }, () => provider.acquire()))) as LocalSandbox[];
    for (const box of unused) await box.writeFile('words.txt', 'a b');
    const processes = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).length;
    const before = readCalls();
    await Promise.all(unused.map((box) => box.dispose()));
    const reads = readCalls() - before;
    // A scan reads the environment of each of the machine's processes (two reads or more each).
    expect(reads).toBeLessThan(processes);
    for (const box of unused) {
      expect(existsSync(box.root)).toBe(false);
      expect(box.sessionsOpened).toBe(0);
    }
  });

  it('runs setup commands and fails acquire when one fails', async () => {
    sandbox = await provider.acquire({ setup: ['echo ready > marker.txt'] });
    expect((await sandbox.exec('cat marker.txt')).stdout).toBe('ready\n');
    await expect(provider.acquire({ setup: ['exit 9'] })).rejects.toThrow(
      /setup command 1 of 1 failed \(exit 9\): exit 9/,
    );
  });

  it('rejects unknown settings naming the allowed keys', () => {
    expect(() => createLocalSandboxProvider({ rooot: '/tmp' })).toThrow(
      /allowed keys: root, inheritEnv, env, maxOutputBytes/,
    );
  });

  it('reopens the shell after it dies, in the workdir', async () => {
    sandbox = await provider.acquire();
    const shellPid = Number((await sandbox.exec('echo $$')).stdout);
    process.kill(shellPid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const result = await sandbox.exec('pwd');
    expect(result.stdout.trim()).toBe(sandbox.workdir);
  });

  it('never writes through a symlink planted below the sandbox root (a temp dir replaced by one)', async () => {
    sandbox = await provider.acquire();
    const temp = sandbox.tempDir;
    const outside = `${temp}-outside`;
    await sandbox.exec(`mkdir '${outside}' && mv '${temp}' '${temp}.saved' && ln -s '${outside}' '${temp}'`);
    await expect(sandbox.writeFile(`${temp}/upload.txt`, 'PAYLOAD')).rejects.toThrow(
      /a directory on the way is a symlink/,
    );
    expect((await sandbox.exec(`ls -A '${outside}'`)).stdout).toBe('');
    // An ordinary write below the root still works, creating directories on the way.
    await sandbox.writeFile(`${sandbox.workdir}/deep/new/file.txt`, 'ok');
    expect((await sandbox.exec('cat deep/new/file.txt')).stdout).toBe('ok');
  });
});
