// A minimal SandboxV1 over a temporary directory, for tests that must not wait for the real
// backends. `busyboxOnly` runs every command with a PATH holding nothing but busybox applets,
// so the fallbacks for images without ripgrep/GNU tools are exercised on the host.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { ExecOptions, ExecResult, SandboxV1 } from '@shears/core';

let busyboxBin: string | undefined;
function busyboxPath(): string {
  if (busyboxBin) return busyboxBin;
  const dir = mkdtempSync(join(tmpdir(), 'shears-busybox-'));
  const list = spawnSync('busybox', ['--list'], { encoding: 'utf8' });
  if (list.status !== 0) throw new Error('busybox is not installed');
  for (const applet of list.stdout.split('\n').filter(Boolean))
    symlinkSync('/usr/bin/busybox', join(dir, applet));
  busyboxBin = dir;
  return dir;
}

export function hasBusybox(): boolean {
  return spawnSync('busybox', ['true']).status === 0;
}

export function createTempSandbox(options: { busyboxOnly?: boolean } = {}): SandboxV1 & { root: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'shears-file-')));
  const workdir = join(root, 'work');
  const tempDir = join(root, 'tmp');
  mkdirSync(workdir);
  mkdirSync(tempDir);
  const env: Record<string, string> = { HOME: root, LANG: 'C.UTF-8' };
  env.PATH = options.busyboxOnly ? busyboxPath() : (process.env.PATH ?? '/usr/bin:/bin');
  const shell = options.busyboxOnly ? join(busyboxPath(), 'sh') : '/bin/sh';
  const abs = (path: string) => (isAbsolute(path) ? path : resolve(workdir, path));
  return {
    specificationVersion: 'v1',
    id: `temp-${root}`,
    backend: options.busyboxOnly ? 'temp-busybox' : 'temp',
    workdir,
    tempDir,
    isolated: false,
    root,
    exec(command: string, execOptions: ExecOptions = {}): Promise<ExecResult> {
      const started = Date.now();
      return new Promise((done, fail) => {
        const child = spawn(shell, ['-c', command], {
          cwd: execOptions.cwd ? abs(execOptions.cwd) : workdir,
          env: { ...env, ...execOptions.env },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        let output = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          output += chunk;
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          output += chunk;
        });
        child.on('error', fail);
        child.stdin.on('error', () => {});
        child.stdin.end(execOptions.stdin ?? '');
        child.on('close', (code) =>
          done({
            exitCode: code ?? 1,
            output,
            stdout,
            stderr,
            timedOut: false,
            durationMs: Date.now() - started,
          }),
        );
      });
    },
    async readFile(path: string) {
      return new Uint8Array(await readFile(abs(path)));
    },
    async writeFile(path: string, data: Uint8Array | string) {
      await mkdir(dirname(abs(path)), { recursive: true });
      await writeFile(abs(path), data);
    },
    async dispose() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export function listApplets(): string[] {
  return readdirSync(busyboxPath());
}
