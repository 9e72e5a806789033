// The files a run writes (JSONL, the HTML report, the evaluation summary, the run identity),
// and the rule they all follow: an existing file is never overwritten unless the user says so
// (`--force`, or `--resume` for the files of the run being resumed). Every file error becomes a
// message naming the file; what a file receives is redacted value by value, so it stays valid.
import { closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { ConfigError, describeError, InvalidArgumentError, ShearsError } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
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
  /** Appends one record, redacted value by value (never as text, so the line stays valid JSON). */
  write(record: unknown): void;
  /**
   * Closes the file. A file this run created (`mode: 'new'`) that received no record is removed,
   * with its `companions` (the run record): a run that failed before its first group leaves
   * nothing that would block the next one.
   */
  close(): void;
}

/**
 * Opens a JSONL file for writing. `mode: 'new'` fails when the file exists (the guard's promise
 * holds even if a file appeared since), `'replace'` truncates it (--force), `'append'` adds to it.
 * `initial` records are written first, through a temporary file renamed into place, so a
 * resumed file is never half-rewritten.
 */
export function createJsonlWriter(
  path: string,
  redact: Redactor,
  options: {
    mode: 'new' | 'replace' | 'append';
    initial?: readonly unknown[];
    cwd?: string;
    /** Files written for this run beside the JSONL, removed with it when it stays empty. */
    companions?: readonly string[];
  },
): JsonlWriter {
  const line = (record: unknown) => `${JSON.stringify(redact.value(record))}\n`;
  let fd: number;
  makeParent(path, options.cwd);
  try {
    if (options.initial) {
      const temporary = `${path}.${process.pid}.tmp`;
      const handle = openSync(temporary, 'w');
      try {
        for (const record of options.initial) writeSync(handle, line(record));
      } finally {
        closeSync(handle);
      }
      if (options.mode === 'new' && existsSync(path))
        throw Object.assign(new Error('exists'), { code: 'EEXIST' });
      renameSync(temporary, path);
      fd = openSync(path, 'a');
    } else fd = openSync(path, options.mode === 'new' ? 'wx' : options.mode === 'replace' ? 'w' : 'a');
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST')
      throw outputExists(
        [path],
        `${options.cwd ? relative(options.cwd, path) || path : path} appeared while the run started; shears never overwrites output (use --force)`,
      );
    throw fileError(path, 'write', error, options.cwd);
  }
  let open = true;
  let written = 0;
  return {
    path,
    write(record) {
      try {
        writeSync(fd, line(record));
        written++;
      } catch (error) {
        throw fileError(path, 'write', error, options.cwd);
      }
    },
    close() {
      if (!open) return;
      closeSync(fd);
      open = false;
      if (options.mode === 'new' && !options.initial && written === 0)
        for (const created of [path, ...(options.companions ?? [])]) rmSync(created, { force: true });
    },
  };
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
      throw outputExists(
        [path],
        `${options.cwd ? relative(options.cwd, path) || path : path} appeared during the run; shears never overwrites output (use --force)`,
      );
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

/** `run.prometheus` belongs to the long-running commands; a short run refuses it rather than ignore it. */
export function refusePrometheus(config: ShearsConfig, command: string): void {
  if (config.run.prometheus)
    throw new ConfigError({
      message: `run.prometheus: only \`shears serve\` and \`shears train\` expose /metrics; \`shears ${command}\` writes the metrics stream (<out>.metrics.jsonl) instead. Remove run.prometheus for this command`,
      issues: [{ path: 'run.prometheus', message: `not read by ${command}`, value: config.run.prometheus }],
    });
}
