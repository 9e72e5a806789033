// Repository preparation on the host: copy or clone the task's repository, give it a fresh
// one-commit git history (so the fix's history is not reachable from the sandbox), and work out the
// test files put in place only at grading time (the test patch applied on the host, hidden tests).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { SandboxError } from '@shears/core';
import { patchedFiles } from './task-loaders.js';
import type { SweTask } from './task-schema.js';

const execFileAsync = promisify(execFile);

export interface PreparedRepository {
  /** Host directory holding the repository with its fresh history. */
  dir: string;
  baseCommit: string;
  /**
   * Test files put in place in the grading container after the agent's change (path → bytes, null
   * to delete): the files the test patch touches, as the patch leaves them, and the hidden tests.
   * None of them is in the task image, so the agent never sees them.
   */
  gradingFiles: Map<string, Buffer | null>;
  /** SHA-256 over every tracked file: the per-repository image cache key. */
  contentHash: string;
  dispose(): void;
}

async function git(cwd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync('git', args, {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (cause) {
    const error = cause as { stderr?: string; message: string };
    throw new SandboxError({
      message: `git ${args.join(' ')} failed in ${cwd}: ${(error.stderr ?? error.message).trim()}`,
      cause,
    });
  }
}

function listFiles(root: string, directory = root): string[] {
  const files: string[] = [];
  for (const name of readdirSync(directory)) {
    if (name === '.git') continue;
    const path = join(directory, name);
    const stats = statSync(path);
    if (stats.isDirectory()) files.push(...listFiles(root, path));
    else files.push(relative(root, path));
  }
  return files.sort();
}

const FIXED_DATE = '2000-01-01T00:00:00Z';

/** Copies (path) or clones (url + commit) the repository and rewrites it to a single fresh commit. */
export async function prepareRepository(
  task: SweTask,
  options: { workRoot?: string } = {},
): Promise<PreparedRepository> {
  const dir = mkdtempSync(join(options.workRoot ?? tmpdir(), `shears-swe-${task.id}-`));
  try {
    if (task.repo.path) {
      if (!existsSync(task.repo.path))
        throw new SandboxError({ message: `Task ${task.id}: repository path not found: ${task.repo.path}` });
      cpSync(task.repo.path, dir, {
        recursive: true,
        filter: (source) => !source.split(/[\\/]/).includes('.git'),
      });
    } else {
      await git(dir, ['clone', '--quiet', '--no-checkout', task.repo.url!, '.']);
      await git(dir, ['checkout', '--quiet', task.repo.commit!]);
      rmSync(join(dir, '.git'), { recursive: true, force: true });
    }
    // Fresh history: one commit with a fixed author and date, nothing of the original log.
    const identity = {
      GIT_AUTHOR_NAME: 'shears',
      GIT_AUTHOR_EMAIL: 'shears@localhost',
      GIT_COMMITTER_NAME: 'shears',
      GIT_COMMITTER_EMAIL: 'shears@localhost',
      GIT_AUTHOR_DATE: FIXED_DATE,
      GIT_COMMITTER_DATE: FIXED_DATE,
    };
    await git(dir, ['init', '--quiet', '--initial-branch=main']);
    await git(dir, ['add', '-A']);
    await git(
      dir,
      ['-c', 'commit.gpgsign=false', 'commit', '--quiet', '--allow-empty', '-m', `shears task ${task.id}`],
      identity,
    );
    const baseCommit = (await git(dir, ['rev-parse', 'HEAD'])).trim();
    const files = listFiles(dir);
    const gradingFiles = new Map<string, Buffer | null>();
    if (task.testPatch)
      for (const [path, content] of await filesAfterPatch(dir, task.testPatch))
        gradingFiles.set(path, content);
    for (const [path, content] of Object.entries(task.hiddenTests))
      gradingFiles.set(path, Buffer.from(content));
    const hash = createHash('sha256');
    for (const file of files)
      hash
        .update(file)
        .update('\0')
        .update(readFileSync(join(dir, file)))
        .update('\0');
    return {
      dir,
      baseCommit,
      gradingFiles,
      contentHash: hash.digest('hex'),
      dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Applies a unified diff to a throwaway copy of the repository on the host and returns the new
 * content of every file it touches (null for deleted files). Used to play a fix into a sandbox
 * as file writes, so the patch file itself never enters the sandbox.
 */
export async function filesAfterPatch(repoDir: string, patch: string): Promise<Map<string, Buffer | null>> {
  const copy = mkdtempSync(join(tmpdir(), 'shears-swe-apply-'));
  try {
    cpSync(repoDir, copy, { recursive: true });
    const patchFile = join(copy, '.shears.patch');
    writeFileSync(patchFile, patch);
    await git(copy, ['apply', '--whitespace=nowarn', '.shears.patch']);
    const result = new Map<string, Buffer | null>();
    for (const file of patchedFiles(patch)) {
      const full = join(copy, file);
      result.set(file, existsSync(full) ? readFileSync(full) : null);
    }
    for (const match of patch.matchAll(/^--- a\/(.+)\n\+\+\+ \/dev\/null$/gm))
      result.set(match[1]!.trim(), null);
    return result;
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}
