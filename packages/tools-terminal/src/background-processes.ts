// Background processes for the `terminal` (background=true) and `process` tools. They are
// started through `sandbox.exec`, so one implementation serves every backend: the command runs
// detached (its own session via setsid(1) where available) with output in a log file and its
// exit code in a second file under the sandbox's temp dir. The registry is per rollout
// (ToolContext.state) and per sandbox.
import { randomBytes } from 'node:crypto';
import type { SandboxV1, ToolContext } from '@shears/core';
import { SandboxError } from '@shears/core';
import { shellQuote } from './shell-session.js';

/** At most this many tracked processes per sandbox (as hermes-agent). */
export const MAX_TRACKED_PROCESSES = 64;

export interface BackgroundProcess {
  sessionId: string;
  command: string;
  pid: number;
  cwd: string | undefined;
  startedAt: number;
  logPath: string;
  exitPath: string;
  /** Set once the process is known to have ended. */
  exitCode?: number | null;
  killed?: boolean;
}

export type BackgroundStatus = 'running' | 'exited' | 'killed';

export interface BackgroundSnapshot {
  status: BackgroundStatus;
  exitCode: number | null;
  /** The tail of the log (at most `tailBytes`), decoded with replacement characters. */
  output: string;
  totalBytes: number;
}

const STATE_KEY = 'shears.tools-terminal.processes';

/** The registry of one sandbox within one rollout. */
export function processRegistry(
  context: Pick<ToolContext, 'state' | 'sandbox'>,
): Map<string, BackgroundProcess> {
  let bySandbox = context.state.get(STATE_KEY) as Map<string, Map<string, BackgroundProcess>> | undefined;
  if (!bySandbox) {
    bySandbox = new Map();
    context.state.set(STATE_KEY, bySandbox);
  }
  let registry = bySandbox.get(context.sandbox.id);
  if (!registry) {
    registry = new Map();
    bySandbox.set(context.sandbox.id, registry);
  }
  return registry;
}

export async function startBackgroundProcess(
  sandbox: SandboxV1,
  registry: Map<string, BackgroundProcess>,
  options: { command: string; cwd?: string; now?: () => number },
): Promise<BackgroundProcess> {
  if ([...registry.values()].length >= MAX_TRACKED_PROCESSES) {
    // Forget the oldest finished process first; refuse only when all are still running.
    const finished = [...registry.values()].filter((entry) => entry.exitCode !== undefined || entry.killed);
    if (finished.length === 0) {
      throw new SandboxError({
        sandboxId: sandbox.id,
        message: `Too many background processes (${MAX_TRACKED_PROCESSES} running); kill some with the process tool first`,
      });
    }
    registry.delete(finished[0]!.sessionId);
  }
  const sessionId = `proc_${randomBytes(6).toString('hex')}`;
  const dir = `${sandbox.tempDir}/shears-bg`;
  const logPath = `${dir}/${sessionId}.log`;
  const exitPath = `${dir}/${sessionId}.exit`;
  const inner = [
    `if command -v bash >/dev/null 2>&1; then bash -c ${shellQuote(options.command)}; else sh -c ${shellQuote(options.command)}; fi`,
    // Written to a temporary name and renamed, so a reader never sees an empty exit file.
    `code=$?; printf '%s\\n' "$code" > ${shellQuote(`${exitPath}.tmp`)} && mv ${shellQuote(`${exitPath}.tmp`)} ${shellQuote(exitPath)}`,
  ].join('\n');
  const launcher = `mkdir -p ${shellQuote(dir)} && { if command -v setsid >/dev/null 2>&1; then setsid sh -c ${shellQuote(inner)}; else sh -c ${shellQuote(inner)}; fi; } > ${shellQuote(logPath)} 2>&1 < /dev/null & echo $!`;
  const result = await sandbox.exec(launcher, { cwd: options.cwd, timeoutMs: 30_000 });
  const pid = Number(result.stdout.trim());
  if (result.exitCode !== 0 || !Number.isInteger(pid) || pid <= 0) {
    throw new SandboxError({
      sandboxId: sandbox.id,
      message: `Could not start background process: ${result.output.trim() || `exit ${result.exitCode}`}`,
    });
  }
  const entry: BackgroundProcess = {
    sessionId,
    command: options.command,
    pid,
    cwd: options.cwd,
    startedAt: (options.now ?? Date.now)(),
    logPath,
    exitPath,
  };
  registry.set(sessionId, entry);
  return entry;
}

const SEPARATOR = '__SHEARS_BG_STATUS__';

/** Reads status and the log tail in one round trip. */
export async function inspectBackgroundProcess(
  sandbox: SandboxV1,
  entry: BackgroundProcess,
  tailBytes = 200_000,
): Promise<BackgroundSnapshot> {
  const script = [
    `if [ -f ${shellQuote(entry.exitPath)} ]; then printf 'exited %s\\n' "$(cat ${shellQuote(entry.exitPath)})";`,
    `elif kill -0 ${entry.pid} 2>/dev/null && [ "$(cut -d' ' -f3 /proc/${entry.pid}/stat 2>/dev/null)" != Z ]; then echo running;`,
    // The process may have written its exit code and ended between the two checks above.
    `elif [ -f ${shellQuote(entry.exitPath)} ]; then printf 'exited %s\\n' "$(cat ${shellQuote(entry.exitPath)})";`,
    'else echo gone; fi',
    `wc -c < ${shellQuote(entry.logPath)} 2>/dev/null || echo 0`,
    `echo ${SEPARATOR}`,
    `tail -c ${tailBytes} ${shellQuote(entry.logPath)} 2>/dev/null`,
  ].join('\n');
  const result = await sandbox.exec(script, { timeoutMs: 30_000 });
  const separatorIndex = result.stdout.indexOf(`${SEPARATOR}\n`);
  const head = separatorIndex >= 0 ? result.stdout.slice(0, separatorIndex) : result.stdout;
  const output = separatorIndex >= 0 ? result.stdout.slice(separatorIndex + SEPARATOR.length + 1) : '';
  const [statusLine = '', sizeLine = '0'] = head.trim().split('\n');
  let status: BackgroundStatus = 'running';
  let exitCode: number | null = null;
  if (statusLine.startsWith('exited')) {
    status = entry.killed ? 'killed' : 'exited';
    const parsed = Number(statusLine.slice('exited'.length).trim());
    exitCode = Number.isFinite(parsed) ? parsed : null;
    entry.exitCode = exitCode;
  } else if (statusLine === 'gone') {
    status = entry.killed ? 'killed' : 'exited';
    entry.exitCode ??= null;
  }
  return { status, exitCode, output, totalBytes: Number(sizeLine.trim()) || 0 };
}

/** SIGTERM to the process group (or the pid), SIGKILL a second later if it still runs. */
export async function killBackgroundProcess(sandbox: SandboxV1, entry: BackgroundProcess): Promise<void> {
  entry.killed = true;
  const pid = entry.pid;
  await sandbox.exec(
    `kill -TERM -${pid} 2>/dev/null || kill -TERM ${pid} 2>/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do s=$(cut -d' ' -f3 /proc/${pid}/stat 2>/dev/null); { [ -z "$s" ] || [ "$s" = Z ]; } && break; sleep 0.1; done; kill -KILL -${pid} 2>/dev/null || kill -KILL ${pid} 2>/dev/null; true`,
    { timeoutMs: 30_000 },
  );
}
