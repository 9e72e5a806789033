// The files a run writes beside its trajectory sinks (the HTML report, the evaluation summary, the
// run identity, the metrics stream), and the rule every output follows: an existing file is never
// overwritten unless the user says so (`--force`, or `--resume` for the files of the run being
// resumed). Every file error becomes a message naming the file; what a file receives is redacted
// value by value, so it stays valid.
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { describeError, InvalidArgumentError, ShearsError } from '@shears/core';
import type { Redactor } from '../redact.js';

/** A file the CLI could not read or write (its message names the file and the reason). */
class OutputFileError extends ShearsError {
  readonly path: string;
  constructor(options: { path: string; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_OUTPUT_FILE', cause: options.cause });
    this.path = options.path;
  }
  static override isInstance(error: unknown): error is OutputFileError {
    return ShearsError.isInstance(error) && error.code === 'SHEARS_OUTPUT_FILE';
  }
}

/** An output that exists and would be overwritten: a usage error (exit 2) naming the files. */
function outputExists(paths: readonly string[], message: string): InvalidArgumentError {
  return new InvalidArgumentError({ argument: 'output', value: paths, message });
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: string })?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'ENOTDIR':
      return 'a parent of it is a file, not a directory';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EROFS':
      return 'read-only file system';
    default:
      return describeError(error);
  }
}

export function fileError(path: string, doing: string, error: unknown, cwd?: string): OutputFileError {
  return new OutputFileError({
    path,
    message: `cannot ${doing} ${cwd ? relative(cwd, path) || path : path}: ${reasonOf(error)}`,
    cause: error,
  });
}

/**
 * Refuses to start when any of `paths` exists (checked before the run does anything), naming
 * each file and the ways on: `--force`, `--resume` where the command has it, another path.
 */
export function guardOutputs(options: {
  paths: readonly string[];
  cwd: string;
  force: boolean;
  /** How to pick another path, e.g. "--out OTHER.jsonl". */
  elsewhere: string;
  /** The command can continue these files with --resume. */
  resumable?: boolean;
}): void {
  if (options.force) return;
  const existing = options.paths.filter((path) => existsSync(path));
  if (existing.length === 0) return;
  const names = existing.map((path) => {
    const shown = relative(options.cwd, path) || path;
    try {
      const stat = statSync(path);
      return stat.isDirectory()
        ? `${shown} (a directory)`
        : `${shown} (${formatBytes(stat.size)}, modified ${stat.mtime.toISOString()})`;
    } catch {
      return shown;
    }
  });
  const ways = [
    ...(options.resumable ? ['--resume to continue that run'] : []),
    `--force to replace ${existing.length > 1 ? 'them' : 'it'}`,
    `${options.elsewhere} to write elsewhere`,
  ];
  throw outputExists(
    existing,
    `${names.join(', ')} already exist${existing.length > 1 ? '' : 's'}; shears never overwrites output. Use ${ways.join(', or ')}`,
  );
}

function formatBytes(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 ** 2) return `${(size / 1024).toFixed(1)} KiB`;
  return `${(size / 1024 ** 2).toFixed(1)} MiB`;
}

/** Creates the folder of `path`; a file where a folder should be is named as such. */
function makeParent(path: string, cwd: string | undefined): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw fileError(
      path,
      'write',
      code === 'EEXIST' ? Object.assign(error as Error, { code: 'ENOTDIR' }) : error,
      cwd,
    );
  }
}

export interface JsonlWriter {
  readonly path: string;
  /** Appends one row, redacted value by value (never as text, so the line stays valid JSON). */
  write(row: unknown): void;
  close(): void;
}

/**
 * Opens the JSONL file of the metrics stream (rows written as they come, from timers too, so
 * synchronously). `mode: 'new'` fails when the file exists (the guard's promise holds even if a
 * file appeared since), `'replace'` truncates it (--force), `'append'` adds to it (--resume).
 * Scored groups go through the trajectory sinks instead (output/run-sinks.ts).
 */
export function createJsonlWriter(
  path: string,
  redact: Redactor,
  options: { mode: 'new' | 'replace' | 'append'; cwd?: string },
): JsonlWriter {
  let fd: number;
  makeParent(path, options.cwd);
  try {
    fd = openSync(path, options.mode === 'new' ? 'wx' : options.mode === 'replace' ? 'w' : 'a');
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST')
      throw appearedError(path, options.cwd, 'while the run started');
    throw fileError(path, 'write', error, options.cwd);
  }
  let open = true;
  return {
    path,
    write(row) {
      try {
        writeSync(fd, `${JSON.stringify(redact.value(row))}\n`);
      } catch (error) {
        throw fileError(path, 'write', error, options.cwd);
      }
    },
    close() {
      if (!open) return;
      closeSync(fd);
      open = false;
    },
  };
}

/** An output that appeared after the guard looked (another run started on the same path). */
export function appearedError(path: string, cwd: string | undefined, when: string): InvalidArgumentError {
  return outputExists(
    [path],
    `${cwd ? relative(cwd, path) || path : path} appeared ${when}; shears never overwrites output (use --force)`,
  );
}

/** Writes a whole file (a report, a summary): new unless `replace`; errors name the file. */
export function writeOutputFile(
  path: string,
  content: string,
  options: { replace: boolean; cwd?: string },
): void {
  let fd: number;
  makeParent(path, options.cwd);
  try {
    fd = openSync(path, options.replace ? 'w' : 'wx');
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST')
      throw appearedError(path, options.cwd, 'during the run');
    throw fileError(path, 'write', error, options.cwd);
  }
  try {
    writeSync(fd, content);
  } catch (error) {
    throw fileError(path, 'write', error, options.cwd);
  } finally {
    closeSync(fd);
  }
}
