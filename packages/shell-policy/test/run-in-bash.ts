// Runs a command line in a real bash, in a fresh directory holding a file `victim`, and says
// whether the file is gone afterwards: the proof that an evasion really runs what the policy must
// refuse. HOME is the directory too, so nothing a line writes under ~ reaches the real home.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BashRun {
  exitCode: number | null;
  output: string;
  victimGone: boolean;
}

export async function runInBash(line: string, timeoutMs = 20_000): Promise<BashRun> {
  const directory = await mkdtemp(join(tmpdir(), 'shell-policy-proof-'));
  try {
    await writeFile(join(directory, 'victim'), 'v\n');
    const child = spawn('bash', ['--noprofile', '--norc', '-c', line], {
      cwd: directory,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: directory, LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    const exitCode = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    return { exitCode, output, victimGone: !existsSync(join(directory, 'victim')) };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
