// Sandbox contract: one isolated workspace owned by one rollout. The reward runs in the same
// sandbox; cleanup targets the same sandbox.

export interface ExecOptions {
  /** Kill the command (and its children) after this long; exit code 124 and `timedOut: true`. */
  timeoutMs?: number;
  /** Working directory for this command; relative paths resolve against the sandbox workdir. */
  cwd?: string;
  /** Extra environment for this command only. */
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  signal?: AbortSignal;
}

export interface ExecResult {
  exitCode: number;
  /** stdout and stderr interleaved as far as the backend can (what a terminal user sees). */
  output: string;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
}

/** Options for `SandboxV1.spawn`. */
export interface SpawnOptions {
  /** Working directory; relative paths resolve against the sandbox workdir (default: the workdir). */
  cwd?: string;
  /** Extra environment for this process only (added to the sandbox's own). */
  env?: Record<string, string>;
  /** Aborting kills the process. */
  signal?: AbortSignal;
}

/** How a spawned process ended. */
export interface SpawnedExit {
  /** Exit code, or null when a signal ended it. */
  exitCode: number | null;
  signal: string | null;
}

/**
 * A long-running process inside a sandbox with streaming stdio (an MCP stdio server, a language
 * server). Killed by `kill()` and, at the latest, by the sandbox's `dispose()`.
 */
export interface SpawnedProcess {
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  /** Settles when the process has ended (never rejects). */
  readonly exited: Promise<SpawnedExit>;
  /** Kills the process (and what it started, where the backend can); harmless once it ended. */
  kill(): Promise<void>;
}

export interface SandboxLimits {
  memoryMb?: number;
  cpus?: number;
  pids?: number;
  diskMb?: number;
}

export interface SandboxSpec {
  /** Container image for container backends. */
  image?: string;
  /** Workspace directory inside the sandbox; backends choose a default. */
  workdir?: string;
  env?: Record<string, string>;
  limits?: SandboxLimits;
  /** Network access; off by default for isolating backends. */
  network?: 'none' | 'bridge' | 'host';
  labels?: Record<string, string>;
  /**
   * Files written into the sandbox once after creation, before `setup` runs: path (relative to
   * the workdir, or absolute) to content (text as UTF-8, or bytes). Written with the sandbox's own
   * `writeFile`, so they need no shell and reach every backend (local, docker, ssh) alike.
   */
  files?: Record<string, string | Uint8Array>;
  /** Commands run once after creation (after `files` are written), before the sandbox is handed out. */
  setup?: string[];
  /** Backend-specific settings. */
  options?: Record<string, unknown>;
}

export interface SandboxV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  /** Backend id: `local`, `docker`, `ssh`, ... */
  readonly backend: string;
  /** Absolute path of the workspace inside the sandbox. */
  readonly workdir: string;
  /** Absolute path of a scratch directory inside the sandbox (persisted tool results go here). */
  readonly tempDir: string;
  /** Whether commands are isolated from the host (false for `local`). */
  readonly isolated: boolean;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Optional: starts `command` with `args` (no shell) with stdin, stdout and stderr as streams,
   * for programs that talk over stdio while they run. Backends without it cannot host them.
   */
  spawn?(command: string, args: readonly string[], options?: SpawnOptions): Promise<SpawnedProcess>;
  readFile(path: string, options?: { signal?: AbortSignal }): Promise<Uint8Array>;
  writeFile(
    path: string,
    data: Uint8Array | string,
    options?: { signal?: AbortSignal; mode?: number },
  ): Promise<void>;
  /** Release every resource; calling it twice is harmless. */
  dispose(): Promise<void>;
}

export interface SandboxProviderV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  acquire(spec?: SandboxSpec, options?: { signal?: AbortSignal }): Promise<SandboxV1>;
  /** Dispose every sandbox this provider still holds and stop its background work. */
  close(): Promise<void>;
}
