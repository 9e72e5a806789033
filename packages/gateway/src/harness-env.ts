// The `harness` env: a rollout is an existing agent program (a coding CLI, an SDK app) started
// in the rollout's own sandbox against the rollout's own gateway session, under a wall-clock and
// a request limit. The gateway records what the program asked the model; the thread that offered
// the program's shell tool (its main conversation) becomes the trajectory — messages for the
// viewer and judges, exact tokens for the trainer — and the task's verifier runs in the same
// sandbox for the reward. It lives in @shears/gateway because it is the gateway's one consumer
// in shears and needs nothing else (no tool package, no parser).
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import {
  type AgentResult,
  type ChatMessage,
  ConfigError,
  type EnvItem,
  type EnvV1,
  InvalidArgumentError,
  messageText,
  parseJson,
  type RewardResult,
  type RolloutRunContext,
  type SandboxSpec,
  type SandboxV1,
  ServerError,
  type ServerV1,
  ShearsError,
  type ToolV1,
  type TrajectoryStep,
  type Usage,
} from '@shears/core';
import { z } from 'zod';
import type { Gateway, GatewaySession } from './gateway.js';
import { createGateway } from './gateway.js';
import { parseSettings } from './gateway-options.js';
import type { GatewayRecord, GatewayThreadRecord } from './gateway-record.js';
import { createHarnessDemoPolicy } from './harness-demo-policy.js';
import { HARNESS_PRESETS, type HarnessPreset } from './harness-presets.js';
import { randomId } from './ids.js';

export interface HarnessTask extends EnvItem {
  /** Files written into the workspace before the harness starts (relative paths). */
  files?: Record<string, string>;
  /** Shell command run in the workspace after the harness: exit 0 is reward 1, anything else 0. */
  verify: string;
  /**
   * A shell command that solves the task: what the scripted demo policy (`server.provider:
   * scripted`) has the harness run through its shell tool. Never shown to a model.
   */
  solution?: string;
}

/**
 * A harness run that made no model request: it could not start, exited before its first request,
 * or ended without asking the model. The rollout failed (with the harness's output tail); it is
 * not scored.
 */
export class HarnessNoModelRequestError extends ShearsError {
  readonly exitCode: number;
  readonly outputTail: string;
  constructor(options: { message: string; exitCode: number; outputTail: string }) {
    super(options.message, { code: 'SHEARS_HARNESS_NO_MODEL_REQUEST' });
    this.exitCode = options.exitCode;
    this.outputTail = options.outputTail;
  }
}

export const harnessTaskSchema = z
  .object({
    id: z.string().min(1),
    prompt: z.string().min(1),
    files: z.record(z.string().min(1), z.string()).optional(),
    verify: z.string().min(1),
    solution: z.string().min(1).optional(),
  })
  .passthrough();

/** A model name goes into command lines and JSON/TOML config files: keep it to safe characters. */
const modelNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, 'use letters, digits and . _ : / @ - only');

export const harnessEnvSettingsSchema = z.strictObject({
  /** One of the ready presets (`qwen-code`, `opencode`, `claude-code`, `codex`). */
  preset: z.string().min(1).optional(),
  /** The shell command line that starts the harness (replaces the preset's); the task is in "$SHEARS_PROMPT". */
  command: z.string().min(1).optional(),
  /** Extra environment (placeholders filled), over the preset's. */
  env: z.record(z.string().min(1), z.string()).optional(),
  /** Extra files (`~/…` in the harness HOME, else in the workspace; placeholders filled), over the preset's. */
  files: z.record(z.string().min(1), z.string()).optional(),
  /** A folder put first on PATH (where the harness CLI is installed). */
  bin: z.string().min(1).optional(),
  /** The tasks: `bundled`, a JSON or JSONL file, or the tasks themselves. */
  tasks: z.unknown().optional(),
  /** Wall-clock limit of one harness run (default 600 000 ms); past it the run is killed and the rollout is a `timeout`. */
  timeoutMs: z.number().int().positive().optional(),
  /** Model requests one rollout may make (default 50); later ones get a 403 and the rollout is a model failure. */
  maxRequests: z.number().int().positive().optional(),
  /** Separate conversations (threads) one rollout may open (default 256); a request starting another gets a 403 and the rollout is a model failure. */
  maxThreads: z.number().int().positive().optional(),
  /** The model name the harness is given (default: the server's). */
  model: modelNameSchema.optional(),
  /** The harness's shell tool, which marks its main conversation (default: the preset's). */
  mainTool: z.string().min(1).optional(),
  /** Shuffles the order tasks are drawn in (the CLI passes `env.seed`); without it, file order. */
  seed: z.number().int().optional(),
  /** Time limit of a task's verifier (default 120 000 ms). */
  verifyTimeoutMs: z.number().int().positive().optional(),
  /** Container image for container sandboxes. */
  image: z.string().min(1).optional(),
  /** An in-process agent program run instead of a command (an SDK app): see `HarnessProgram`. */
  program: z.custom<HarnessProgram>((value) => typeof value === 'function').optional(),
  /** How a container sandbox reaches the gateway: see `HarnessReach`. */
  reach: z.custom<HarnessReach>((value) => typeof value === 'function').optional(),
  /**
   * The env's tools, served to the harness over the rollout's MCP endpoint (`{{mcpUrl}}`) and
   * run in the rollout's sandbox; a preset is given its MCP config for them. (A config file adds
   * tools with `env.tools`; those are served the same way.)
   */
  tools: z
    .array(
      z.custom<ToolV1>(
        (value) =>
          typeof value === 'object' &&
          value !== null &&
          typeof (value as ToolV1).name === 'string' &&
          typeof (value as ToolV1).execute === 'function',
        { message: 'expected a shears ToolV1 (e.g. createTerminalTool() from @shears/tools-terminal)' },
      ),
    )
    .min(1)
    .optional(),
});

export type HarnessEnvSettings = Omit<
  z.input<typeof harnessEnvSettingsSchema>,
  'tasks' | 'reach' | 'program' | 'tools'
> & {
  tasks?: string | HarnessTask[];
  reach?: HarnessReach;
  program?: HarnessProgram;
  tools?: ToolV1[];
};

/**
 * An agent program that runs in this process (an app built on the OpenAI Agents SDK or the AI
 * SDK): it is given its session's URLs, key and model, the task, the rollout's sandbox for its
 * tools, and a signal that fires at the wall-clock limit. It returns its exit code (default 0).
 */
export type HarnessProgram = (run: {
  baseUrl: string;
  openaiBaseUrl: string;
  apiKey: string;
  model: string;
  prompt: string;
  sandbox: SandboxV1;
  signal: AbortSignal;
}) => Promise<number | undefined>;

/**
 * How the harness in a sandbox reaches the gateway: given the gateway and the sandbox, the
 * origin to use in it (e.g. `http://127.0.0.1:8080` of a relay inside a container) and a cleanup.
 * The default reaches the gateway's own URL, which only a sandbox sharing the host's loopback
 * (the local sandbox) can use.
 */
export type HarnessReach = (options: {
  gateway: Gateway;
  sandbox: SandboxV1;
  signal: AbortSignal;
}) => Promise<{
  origin: string;
  /** Wraps the harness command line (e.g. to start it under an in-container relay). */
  wrapCommand?: (command: string) => string;
  close(): Promise<void>;
}>;

/** What the env keeps of one harness run, for the reward and the record. */
export interface HarnessRunSummary {
  preset: string | null;
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
  /** The last 4 000 characters of what the harness printed. */
  outputTail: string;
  requestLimitReached: boolean;
  /** The harness tried to open more threads than `maxThreads`. */
  threadLimitReached: boolean;
  mainThread: string | null;
  requests: Array<{
    index: number;
    api: string | null;
    path: string;
    threadId: string | null;
    status: string;
    httpStatus: number | null;
    finishReason: string | null;
    error: string | null;
  }>;
  /** The calls the harness made to the env's tools over MCP (empty without `tools`). */
  toolCalls: Array<{
    name: string;
    arguments: string;
    error: string | null;
    /** The first 500 characters of the result the harness got. */
    result: string;
    durationMs: number;
  }>;
  threads: Array<{
    id: string;
    api: string;
    requests: number;
    toolNames: string[];
    systemPreview: string;
    branchOf: string | null;
    trained: boolean;
  }>;
}

const BUNDLED_TASKS: HarnessTask[] = [
  {
    id: 'fix-greeting',
    prompt: 'greet.sh prints a typo. Fix greet.sh so that `sh greet.sh` prints exactly: hello, world',
    files: { 'greet.sh': '#!/bin/sh\necho "hello, wrold"\n' },
    verify: 'test "$(sh greet.sh)" = "hello, world"',
    solution: "sed -i 's/wrold/world/' greet.sh",
  },
];

/** The bundled task pack (one small shell-fix task, solvable with any harness's shell tool). */
export function bundledHarnessTasks(): HarnessTask[] {
  return BUNDLED_TASKS.map((task) => ({ ...task, files: { ...task.files } }));
}

/** Reads tasks from a JSON array file or a JSONL file, each line validated. */
export function loadHarnessTasks(path: string): HarnessTask[] {
  const text = readFileSync(path, 'utf8');
  const lines = path.endsWith('.jsonl')
    ? text.split('\n').flatMap((line, index) => (line.trim() ? [{ line, index }] : []))
    : [{ line: text, index: -1 }];
  const tasks = lines.flatMap(({ line, index }) => {
    const where = index >= 0 ? `${path} line ${index + 1}` : path;
    const value = parseJson(line, { source: where });
    return Array.isArray(value)
      ? value.map((entry, at) => ({ entry, where: `${where}[${at}]` }))
      : [{ entry: value, where }];
  });
  return tasks.map(({ entry, where }) => {
    const parsed = harnessTaskSchema.safeParse(entry);
    if (!parsed.success)
      throw new InvalidArgumentError({
        argument: 'tasks',
        value: entry,
        message: `harness task in ${where}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(task)'}: ${issue.message}`).join('; ')}`,
      });
    return parsed.data as HarnessTask;
  });
}

function resolveTasks(tasks: unknown): HarnessTask[] {
  if (tasks === undefined || tasks === 'bundled') return bundledHarnessTasks();
  if (typeof tasks === 'string' && tasks.length > 0) return loadHarnessTasks(tasks);
  if (!Array.isArray(tasks) || tasks.length === 0)
    throw new InvalidArgumentError({
      argument: 'tasks',
      value: tasks,
      message:
        'harness env settings: tasks must be "bundled", a .json or .jsonl file, or a non-empty list of tasks',
    });
  return tasks.map((entry, index) => {
    const parsed = harnessTaskSchema.safeParse(entry);
    if (!parsed.success)
      throw new InvalidArgumentError({
        argument: `tasks[${index}]`,
        value: entry,
        message: `harness env settings: tasks[${index}]: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(task)'}: ${issue.message}`).join('; ')} (a task is { id, prompt, files?, verify, solution? })`,
      });
    return parsed.data as HarnessTask;
  });
}

/** Fisher-Yates with mulberry32: the same seed gives the same order everywhere. */
function shuffle<T>(items: T[], seed: number): void {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
  for (let index = items.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other] as T, items[index] as T];
  }
}

/**
 * Runs the harness detached in the sandbox (its own process group, output to a file) and polls
 * for its exit in short commands. A shell-backed sandbox runs one command at a time: a harness
 * held in `exec` would block the env's tools it calls over MCP, which run in that same sandbox.
 */
async function runDetached(
  sandbox: SandboxV1,
  line: string,
  options: { env: Record<string, string>; limitMs: number; signal: AbortSignal },
): Promise<{ exitCode: number; output: string; timedOut: boolean; durationMs: number }> {
  const started = performance.now();
  const dir = `${sandbox.tempDir}/harness-run-${randomId('')}`;
  await sandbox.exec(`mkdir -p ${shellQuote(dir)}`);
  await sandbox.writeFile(`${dir}/run.sh`, line);
  await sandbox.writeFile(
    `${dir}/wrap.sh`,
    `sh ${shellQuote(`${dir}/run.sh`)} > ${shellQuote(`${dir}/out`)} 2>&1 < /dev/null
echo $? > ${shellQuote(`${dir}/rc.tmp`)}
mv ${shellQuote(`${dir}/rc.tmp`)} ${shellQuote(`${dir}/rc`)}
`,
  );
  const launched = await sandbox.exec(
    `setsid sh ${shellQuote(`${dir}/wrap.sh`)} > /dev/null 2>&1 < /dev/null & echo "PID=$!"`,
    { env: options.env, timeoutMs: 30_000, signal: options.signal },
  );
  const pid = /PID=(\d+)/.exec(launched.output)?.[1];
  if (!pid)
    throw new Error(`harness env: could not start the harness detached: ${launched.output.slice(-500)}`);
  const killGroup = () => sandbox.exec(`kill -KILL -- -${pid} 2>/dev/null; true`, { timeoutMs: 10_000 });
  let exitCode: number | undefined;
  let timedOut = false;
  try {
    while (exitCode === undefined) {
      if (options.signal.aborted) break;
      if (performance.now() - started > options.limitMs) {
        timedOut = true;
        break;
      }
      const poll = await sandbox.exec(
        `f=${shellQuote(`${dir}/rc`)}; [ -f "$f" ] || sleep 0.2; [ -f "$f" ] && cat "$f"; true`,
        { timeoutMs: 10_000 },
      );
      const code = /^(\d+)\s*$/.exec(poll.output.trim())?.[1];
      if (code !== undefined) exitCode = Number(code);
    }
  } finally {
    // Whatever the harness left running in its group goes with it, as with `exec`.
    await killGroup().catch(() => undefined);
  }
  const tail = await sandbox
    .exec(`tail -c 4000 ${shellQuote(`${dir}/out`)} 2>/dev/null; true`, { timeoutMs: 10_000 })
    .catch(() => ({ output: '' }));
  return {
    exitCode: exitCode ?? 124,
    output: `${tail.output}${timedOut ? `\n[Command timed out after ${Math.round(options.limitMs / 1000)}s]` : ''}`,
    timedOut,
    durationMs: performance.now() - started,
  };
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => values[name] ?? whole);
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

const USAGE_ZERO: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * The main conversation: the first thread that offered the harness's main (shell) tool — the
 * conversation the harness began the task with. Sub-agents offer that tool too, and may make
 * more requests than the main loop (Claude Code's `Agent`, opencode's `task`), but begin later.
 * Without a main tool, the busiest thread.
 */
export function pickMainThread(
  record: GatewayRecord,
  mainTool: string | undefined,
): GatewayThreadRecord | undefined {
  const firstRequest = (thread: GatewayThreadRecord) => thread.requestIndices[0] ?? Number.POSITIVE_INFINITY;
  const withTool = mainTool
    ? record.threads
        .filter((thread) => thread.toolNames.includes(mainTool))
        .sort((a, b) => firstRequest(a) - firstRequest(b))
    : [];
  return (
    withTool[0] ?? [...record.threads].sort((a, b) => b.requestIndices.length - a.requestIndices.length)[0]
  );
}

/** Turns a thread's messages into trajectory steps (one per assistant turn) for the viewer. */
function stepsOf(messages: readonly ChatMessage[], startedAt: number): TrajectoryStep[] {
  const steps: TrajectoryStep[] = [];
  messages.forEach((message, index) => {
    if (message.role !== 'assistant') return;
    const results = new Map<string, string>();
    for (const later of messages.slice(index + 1)) {
      if (later.role !== 'tool') break;
      if (typeof later.tool_call_id === 'string') results.set(later.tool_call_id, messageText(later));
    }
    steps.push({
      stepId: steps.length,
      thought:
        typeof message.reasoning_content === 'string'
          ? message.reasoning_content
          : typeof message.reasoning === 'string'
            ? message.reasoning
            : null,
      content: messageText(message) || null,
      toolCalls: (message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
        result: results.get(call.id) ?? '',
        latencyMs: 0,
      })),
      timestamp: startedAt,
      chatMs: 0,
      toolMs: 0,
    });
  });
  return steps;
}

export interface HarnessEnv extends EnvV1<HarnessTask> {
  /** The resolved preset, or null for a custom command. */
  readonly preset: HarnessPreset | null;
  /** What the env kept of a finished rollout's harness run (until its reward has run). */
  runSummary(rolloutId: string): HarnessRunSummary | undefined;
  /** The stand-in for a model (`server.provider: scripted`): plays each task's `solution` through the shell tool. */
  demoPolicy(): ReturnType<typeof createHarnessDemoPolicy>;
  /**
   * For `shears doctor`: whether the harness, run in `sandbox` as a rollout runs it (the same
   * reach, command wrapper and environment), gets an answer from the gateway at the URL it would
   * be given. Starts a gateway in front of `server` (no model request is made), asks
   * `GET <baseUrl>/v1/models` from inside the sandbox, and says what is wrong otherwise.
   */
  probeGateway(options: {
    server: ServerV1;
    sandbox: SandboxV1;
    signal?: AbortSignal;
  }): Promise<HarnessGatewayProbe>;
}

/** What `probeGateway` found: `warn` when the sandbox has no HTTP client to ask with. */
export interface HarnessGatewayProbe {
  status: 'ok' | 'fail' | 'warn' | 'skip';
  detail: string;
  fix?: string;
}

/**
 * Asks `url` with the first HTTP client the sandbox has (curl, wget, node, python3); prints
 * `SHEARS_PROBE <client> <status>` (000 and the client's error when nothing answered), or
 * `SHEARS_PROBE none` without a client.
 */
function gatewayProbeScript(url: string, key: string): string {
  const u = shellQuote(url);
  const header = shellQuote(`Authorization: Bearer ${key}`);
  const node = shellQuote(
    'fetch(process.argv[1],{headers:{authorization:process.argv[2]}}).then((r)=>console.log("SHEARS_PROBE node "+r.status),(e)=>console.log("SHEARS_PROBE node 000 "+String(e.cause?.message??e.message)))',
  );
  const python = shellQuote(
    'import sys,urllib.request as u\ntry:\n r=u.urlopen(u.Request(sys.argv[1],headers={"Authorization":sys.argv[2]}),timeout=10);print("SHEARS_PROBE python3",r.status)\nexcept Exception as e:\n print("SHEARS_PROBE python3",getattr(e,"code",None) or "000",e)',
  );
  return [
    'if command -v curl >/dev/null 2>&1; then',
    `  out=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -H ${header} ${u} 2>&1); echo "SHEARS_PROBE curl $out"`,
    'elif command -v node >/dev/null 2>&1; then',
    `  node -e ${node} ${u} ${header.replace('Authorization: ', '')}`,
    'elif command -v python3 >/dev/null 2>&1; then',
    `  python3 -c ${python} ${u} ${header.replace('Authorization: ', '')}`,
    'elif command -v wget >/dev/null 2>&1; then',
    `  if out=$(wget -q -O /dev/null -T 10 --header=${header} ${u} 2>&1); then echo "SHEARS_PROBE wget 200"; else echo "SHEARS_PROBE wget 000 $out"; fi`,
    'else echo "SHEARS_PROBE none"; fi',
  ].join('\n');
}

/** Proxy variables the harness's environment sets that would carry a request to 127.0.0.1 away. */
function proxyHint(env: Record<string, string | undefined>, origin: string): string | undefined {
  const host = new URL(origin).hostname;
  const noProxy = `${env.NO_PROXY ?? ''},${env.no_proxy ?? ''}`
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (
    noProxy.some(
      (entry) => entry === '*' || entry === host || (host === '127.0.0.1' && entry === 'localhost'),
    )
  )
    return undefined;
  const set = ['http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'].filter((name) => env[name]);
  if (set.length === 0) return undefined;
  return `${set.map((name) => `${name}=${env[name]}`).join(', ')} is set in the harness's environment and NO_PROXY does not name ${host}, so its requests to the gateway go to that proxy`;
}

/** `settings` as typed by hand, or as the registry parsed them from a config file (tasks still unchecked). */
export function createHarnessEnv(
  settings: HarnessEnvSettings | z.output<typeof harnessEnvSettingsSchema>,
): HarnessEnv {
  const parsed = parseSettings(harnessEnvSettingsSchema, settings, 'harness env settings');
  // In the sandbox a relative folder would be read against the rollout's workdir, not where the
  // user wrote it: the CLI resolves a config file's `bin` against its folder; here it must be absolute.
  if (parsed.bin !== undefined && !isAbsolute(parsed.bin))
    throw new ConfigError({
      message: `harness env settings: bin "${parsed.bin}" must be an absolute path (a relative one would be read in each rollout's workdir); in a config file a relative bin is read against the file's folder`,
      issues: [{ path: 'bin', message: 'must be absolute', value: parsed.bin }],
    });
  let preset: HarnessPreset | null = null;
  if (parsed.preset !== undefined) {
    preset = HARNESS_PRESETS[parsed.preset] ?? null;
    if (!preset)
      throw new ConfigError({
        message: `harness env settings: unknown preset "${parsed.preset}" (available: ${Object.keys(HARNESS_PRESETS).join(', ')}; or give "command")`,
        issues: [{ path: 'preset', message: 'unknown preset', value: parsed.preset }],
      });
  }
  const program = settings.program;
  if (program && (parsed.command !== undefined || preset))
    throw new ConfigError({
      message:
        'harness env settings: "program" runs in process; it cannot be combined with "command" or "preset"',
      issues: [{ path: 'program', message: 'combined with command or preset' }],
    });
  const command = parsed.command ?? preset?.command;
  if (!command && !program)
    throw new ConfigError({
      message: `harness env settings: give "preset" (${Object.keys(HARNESS_PRESETS).join(', ')}), "command" or "program"`,
      issues: [{ path: 'command', message: 'required without a preset' }],
    });
  const envTools = parsed.tools ?? [];
  if (envTools.length > 0 && program)
    throw new ConfigError({
      message:
        'harness env settings: "tools" are served over MCP to a command or preset; a "program" runs in process and has the sandbox itself',
      issues: [{ path: 'tools', message: 'combined with program' }],
    });
  // A preset that cannot be handed the endpoint would leave the tools unreachable: refused.
  const mcpUnreachable =
    preset !== null &&
    !preset.mcp &&
    parsed.command === undefined &&
    !Object.values({ ...(parsed.files ?? {}), ...(parsed.env ?? {}) }).some((value) =>
      value.includes('{{mcpUrl}}'),
    );
  const refuseTools = (where: string) =>
    new ConfigError({
      message: `harness env: ${where}, but the "${preset?.id}" preset has no MCP config to hand them to the harness (presets with one: ${Object.values(
        HARNESS_PRESETS,
      )
        .filter((entry) => entry.mcp)
        .map((entry) => entry.id)
        .join(', ')}); give the harness the endpoint yourself in "files" or "env" with {{mcpUrl}}`,
      issues: [{ path: 'tools', message: 'the preset has no MCP config' }],
    });
  if (envTools.length > 0 && mcpUnreachable) throw refuseTools('settings give "tools"');
  const tasks = resolveTasks(parsed.tasks);
  if (parsed.seed !== undefined) shuffle(tasks, parsed.seed);
  const ids = new Set<string>();
  for (const task of tasks) {
    if (ids.has(task.id))
      throw new InvalidArgumentError({
        argument: 'tasks',
        value: task.id,
        message: `harness tasks: duplicate task id "${task.id}"`,
      });
    ids.add(task.id);
  }
  const timeoutMs = parsed.timeoutMs ?? 600_000;
  const maxRequests = parsed.maxRequests ?? 50;
  const verifyTimeoutMs = parsed.verifyTimeoutMs ?? 120_000;
  const mainTool = parsed.mainTool ?? preset?.mainTool;
  const envTemplate = { ...(preset?.env ?? {}), ...(parsed.env ?? {}) };
  const filesTemplate = { ...(preset?.files ?? {}), ...(parsed.files ?? {}) };
  const reach = settings.reach;

  const gateways = new Map<ServerV1, Promise<Gateway>>();
  const gatewayFor = (server: ServerV1): Promise<Gateway> => {
    let gateway = gateways.get(server);
    if (!gateway) {
      gateway = createGateway({ server });
      gateways.set(server, gateway);
    }
    return gateway;
  };
  const summaries = new Map<string, HarnessRunSummary>();
  let cursor = 0;
  let warnedBudget = false;

  const writeFiles = async (
    sandbox: SandboxV1,
    files: Record<string, string>,
    home: string,
    values: Record<string, string>,
  ) => {
    for (const [path, content] of Object.entries(files)) {
      const target = path.startsWith('~/') ? `${home}/${path.slice(2)}` : path;
      const folder = target.includes('/') ? target.slice(0, target.lastIndexOf('/')) : '';
      if (folder) await sandbox.exec(`mkdir -p ${shellQuote(folder)}`);
      await sandbox.writeFile(target, fill(content, values));
    }
  };

  async function runProgram(
    run: HarnessProgram,
    options: {
      values: Record<string, string>;
      prompt: string;
      sandbox: SandboxV1;
      signal: AbortSignal;
      limitMs: number;
    },
  ): Promise<{ exitCode: number; output: string; timedOut: boolean; durationMs: number }> {
    const started = performance.now();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`harness program exceeded ${options.limitMs} ms`));
    }, options.limitMs);
    const stop = () => controller.abort(options.signal.reason);
    options.signal.addEventListener('abort', stop, { once: true });
    try {
      const running = run({
        baseUrl: options.values.baseUrl!,
        openaiBaseUrl: options.values.openaiBaseUrl!,
        apiKey: options.values.apiKey!,
        model: options.values.model!,
        prompt: options.prompt,
        sandbox: options.sandbox,
        signal: controller.signal,
      }).then(
        (exitCode) => ({ exitCode }),
        (error: unknown) => ({ error }),
      );
      // A program that ignores its signal cannot hold the rollout past the limit.
      const stopped = new Promise<'stopped'>((resolve) =>
        controller.signal.addEventListener('abort', () => resolve('stopped'), { once: true }),
      );
      const outcome = await Promise.race([running, stopped]);
      const durationMs = performance.now() - started;
      if (outcome === 'stopped' || controller.signal.aborted)
        return { exitCode: 124, output: '', timedOut, durationMs };
      if ('error' in outcome) {
        const error = outcome.error;
        const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        return { exitCode: 1, output: text, timedOut: false, durationMs };
      }
      return {
        exitCode: typeof outcome.exitCode === 'number' ? outcome.exitCode : 0,
        output: '',
        timedOut: false,
        durationMs,
      };
    } finally {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', stop);
    }
  }

  async function doRollout(item: HarnessTask, context: RolloutRunContext): Promise<AgentResult> {
    const { sandbox, signal } = context;
    const started = context.now();
    const gateway = await gatewayFor(context.server);
    if (sandbox.isolated && !reach && !program)
      throw new InvalidArgumentError({
        argument: 'reach',
        value: sandbox.backend,
        message: `harness env: a "${sandbox.backend}" sandbox cannot reach the gateway at ${gateway.url} (it listens on the host's loopback); use the local sandbox, or give "reach" (e.g. createSocketReach from @shears/gateway)`,
      });
    const reached = reach ? await reach({ gateway, sandbox, signal }) : undefined;
    // The run's budget (the env's own, with the config's overrides: `max_turns`) sets the limits.
    const limitMs = context.budget.wallClockMs ?? timeoutMs;
    const requestLimit = context.budget.maxTurns ?? maxRequests;
    const unenforced = (['maxTokens', 'maxCostUsd'] as const).filter(
      (key) => context.budget[key] !== undefined,
    );
    if (unenforced.length > 0 && !warnedBudget) {
      warnedBudget = true;
      context.logger.warn(
        `harness env: budget ${unenforced.join(', ')} cannot be enforced on an external harness and is not; only the wall clock and the request limit (max turns) are`,
      );
    }
    // The tools the run offers this rollout: the env's own and the config's `env.tools`, after
    // the toolset selection.
    const served = context.tools ?? envTools;
    if (served.length > 0 && mcpUnreachable)
      throw refuseTools(`the run offers tools (${served.map((tool) => tool.name).join(', ')})`);
    const session: GatewaySession = gateway.openSession({
      rolloutId: context.rolloutId,
      maxRequests: requestLimit,
      ...(served.length > 0
        ? {
            tools: {
              tools: served,
              sandbox,
              taskId: item.id,
              budget: context.budget,
              userTask: item.prompt.trim().slice(0, 500),
              logger: context.logger,
              ...(context.beforeToolCall ? { beforeToolCall: context.beforeToolCall } : {}),
            },
          }
        : {}),
      ...(parsed.maxThreads ? { maxThreads: parsed.maxThreads } : {}),
      ...(parsed.model ? { model: parsed.model } : {}),
    });
    const origin = reached?.origin ?? gateway.url;
    const baseUrl = `${origin}${session.pathPrefix}`;
    const home = `${sandbox.tempDir}/harness-home`;
    const values: Record<string, string> = {
      baseUrl,
      openaiBaseUrl: `${baseUrl}/v1`,
      apiKey: session.apiKey,
      model: session.model,
      home,
      workdir: sandbox.workdir,
      ...(served.length > 0 ? { mcpUrl: `${baseUrl}/mcp` } : {}),
    };
    let run: { exitCode: number; output: string; timedOut: boolean; durationMs: number };
    let record: GatewayRecord;
    try {
      await sandbox.exec(`mkdir -p ${shellQuote(`${home}/.config`)} ${shellQuote(`${home}/.cache`)}`);
      await writeFiles(sandbox, item.files ?? {}, home, {});
      await writeFiles(
        sandbox,
        served.length > 0 && preset?.mcp ? { ...filesTemplate, ...preset.mcp.files } : filesTemplate,
        home,
        values,
      );
      const env: Record<string, string> = {
        HOME: home,
        XDG_CONFIG_HOME: `${home}/.config`,
        XDG_CACHE_HOME: `${home}/.cache`,
        XDG_DATA_HOME: `${home}/.local/share`,
        XDG_STATE_HOME: `${home}/.local/state`,
        TERM: 'dumb',
        NO_COLOR: '1',
        CI: '1',
        SHEARS_BASE_URL: baseUrl,
        SHEARS_OPENAI_BASE_URL: values.openaiBaseUrl!,
        SHEARS_API_KEY: session.apiKey,
        SHEARS_MODEL: session.model,
        SHEARS_PROMPT: item.prompt,
        ...(served.length > 0 ? { SHEARS_MCP_URL: values.mcpUrl! } : {}),
      };
      const withMcp =
        served.length > 0 && preset?.mcp?.env ? { ...preset.mcp.env, ...(parsed.env ?? {}) } : {};
      for (const [name, value] of Object.entries({ ...envTemplate, ...withMcp }))
        env[name] = fill(value, values);
      if (program) run = await runProgram(program, { values, prompt: item.prompt, sandbox, signal, limitMs });
      else {
        const commandLine =
          served.length > 0 && preset?.mcp?.command && parsed.command === undefined
            ? preset.mcp.command
            : command!;
        const line = `${parsed.bin ? `PATH=${shellQuote(parsed.bin)}:"$PATH"; export PATH; ` : ''}${fill(commandLine, values)}`;
        const wrapped = reached?.wrapCommand ? reached.wrapCommand(line) : line;
        const result =
          served.length > 0
            ? await runDetached(sandbox, wrapped, { env, limitMs, signal })
            : await sandbox.exec(wrapped, { timeoutMs: limitMs, env, signal });
        run = {
          exitCode: result.exitCode,
          output: result.output,
          timedOut: result.timedOut,
          durationMs: result.durationMs,
        };
      }
    } finally {
      // Ends the session whatever happened: later requests with its key are refused.
      record = await session.close();
      await reached?.close();
    }
    // A harness that never reached the model (it could not start, exited first, or answered
    // without asking) did not play the task: a failure with its cause, never a scored 0.
    const modelRequests = record.requests.filter((request) => request.threadId !== null).length;
    if (modelRequests === 0 && !signal.aborted && !run.timedOut) {
      const tail = run.output.trim().slice(-1500);
      const notFound =
        run.exitCode === 127 || /command not found|not found|No such file or directory|ENOENT/i.test(tail);
      throw new HarnessNoModelRequestError({
        message: `harness ${preset ? `"${preset.id}"` : 'command'} ${run.exitCode === 0 ? 'exited 0' : `exited ${run.exitCode}`} without calling the model (0 requests to the gateway)${notFound ? `: it could not start (command not found: check the harness is installed and on PATH${parsed.bin ? `, or in bin ${parsed.bin}` : ', or set "bin" to its folder'})` : ''}; ${tail ? `its output ends:\n${tail}` : 'it printed nothing'}`,
        exitCode: run.exitCode,
        outputTail: tail,
      });
    }
    const main = pickMainThread(record, mainTool);
    const summary: HarnessRunSummary = {
      preset: preset?.id ?? null,
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      durationMs: run.durationMs,
      outputTail: run.output.slice(-4000),
      requestLimitReached: record.requestLimitReached,
      threadLimitReached: record.threadLimitReached,
      mainThread: main?.id ?? null,
      toolCalls: record.toolCalls.map((call) => ({
        name: call.name,
        arguments: call.arguments,
        error: call.error,
        result: call.result.slice(0, 500),
        durationMs: call.durationMs,
      })),
      requests: record.requests.map((request) => ({
        index: request.index,
        api: request.api,
        path: request.path,
        threadId: request.threadId,
        status: request.status,
        httpStatus: request.httpStatus,
        finishReason: request.finishReason,
        error: request.error ? `${request.error.kind}: ${request.error.message}` : null,
      })),
      threads: record.threads.map((thread) => ({
        id: thread.id,
        api: thread.api,
        requests: thread.requestIndices.length,
        toolNames: thread.toolNames,
        systemPreview: thread.systemPreview,
        branchOf: thread.branchOf,
        trained: thread.id === main?.id,
      })),
    };
    const usage = record.requests.reduce<Usage>(
      (sum, request) =>
        request.usage
          ? {
              promptTokens: sum.promptTokens + request.usage.promptTokens,
              completionTokens: sum.completionTokens + request.usage.completionTokens,
              totalTokens: sum.totalTokens + request.usage.totalTokens,
            }
          : sum,
      USAGE_ZERO,
    );
    const messages = main?.messages ?? context.messages;
    const last = messages.at(-1);
    const answered = last?.role === 'assistant' && !(last.tool_calls?.length ?? 0);
    const lastModelRequest = [...record.requests].reverse().find((request) => request.threadId !== null);
    const backendFailed =
      run.exitCode !== 0 &&
      lastModelRequest?.status === 'error' &&
      ['server_error', 'overloaded', 'rate_limit', 'timeout'].includes(lastModelRequest.error?.kind ?? '');
    const stopReason: AgentResult['stopReason'] = signal.aborted
      ? 'aborted'
      : run.timedOut
        ? 'wall_clock'
        : record.requestLimitReached || record.threadLimitReached
          ? 'max_turns'
          : backendFailed
            ? 'server_error'
            : 'answer';
    // Kept for the reward (which deletes it); the oldest go first should rewards not run.
    summaries.set(context.rolloutId, summary);
    if (summaries.size > 1024) summaries.delete(summaries.keys().next().value as string);
    return {
      messages,
      turnsUsed: main?.requestIndices.length ?? 0,
      // The harness ended on its own (whatever its exit code): it is scored like a finished loop.
      finishedNaturally: stopReason === 'answer',
      finalResponse: answered && last ? messageText(last) : null,
      reasoningPerTurn: messages
        .filter((message) => message.role === 'assistant')
        .map((message) => (typeof message.reasoning_content === 'string' ? message.reasoning_content : null)),
      toolErrors: [],
      steps: stepsOf(messages, started),
      usage,
      timings: { totalMs: context.now() - started, chatMs: 0, toolMs: run.durationMs },
      stopReason,
      ...(stopReason === 'server_error'
        ? {
            error: new ServerError({
              message: `the harness exited ${run.exitCode} after the backend failed: ${lastModelRequest?.error?.message ?? ''}`,
              model: context.server.model,
            }),
          }
        : {}),
      ...(main?.tokens ? { tokenRecord: main.tokens } : {}),
      policyRefusals: 0,
    };
  }

  async function probeGateway(options: {
    server: ServerV1;
    sandbox: SandboxV1;
    signal?: AbortSignal;
  }): Promise<HarnessGatewayProbe> {
    const { sandbox, signal } = options;
    const where = `the ${sandbox.backend} sandbox`;
    if (program)
      return {
        status: 'skip',
        detail: 'settings.program runs in this process, which reaches the gateway on its loopback',
      };
    const gateway = await createGateway({ server: options.server });
    try {
      if (sandbox.isolated && !reach)
        return {
          status: 'fail',
          detail: `a harness in ${where} cannot reach the gateway at ${gateway.url}: it listens on this machine's loopback, which ${where} does not share`,
          fix: 'use the local sandbox (sandbox.provider: local), or give the harness env a "reach" (createSocketReach from @shears/gateway, in a JavaScript config or pack)',
        };
      const reached = reach
        ? await reach({ gateway, sandbox, signal: signal ?? new AbortController().signal })
        : undefined;
      const session = gateway.openSession({ rolloutId: randomId('doctor-'), maxRequests: 1 });
      try {
        const origin = reached?.origin ?? gateway.url;
        const url = `${origin}${session.pathPrefix}/v1/models`;
        const values: Record<string, string> = {
          baseUrl: `${origin}${session.pathPrefix}`,
          openaiBaseUrl: `${origin}${session.pathPrefix}/v1`,
          apiKey: session.apiKey,
          model: session.model,
          home: `${sandbox.tempDir}/harness-home`,
          workdir: sandbox.workdir,
        };
        // The environment a rollout gives the harness: the preset's and the settings' variables.
        const probeEnv: Record<string, string> = { TERM: 'dumb', NO_COLOR: '1', CI: '1' };
        for (const [name, value] of Object.entries(envTemplate)) probeEnv[name] = fill(value, values);
        const line = gatewayProbeScript(url, session.apiKey);
        const wrapped = reached?.wrapCommand ? reached.wrapCommand(line) : line;
        const result = await sandbox.exec(wrapped, {
          timeoutMs: 30_000,
          env: probeEnv,
          ...(signal ? { signal } : {}),
        });
        const found = /SHEARS_PROBE (\S+)(?: ([\s\S]*))?/.exec(result.output);
        const via = reach ? ` through its reach (${origin})` : '';
        if (!found)
          return {
            status: 'fail',
            detail: `the probe of the gateway in ${where} did not run (exit ${result.exitCode}${result.timedOut ? ', timed out' : ''}): ${result.output.trim().slice(-300)}`,
          };
        if (found[1] === 'none')
          return {
            status: 'warn',
            detail: `${where} has no curl, wget, node or python3 to ask the gateway at ${origin} with; not checked`,
          };
        const answer = (found[2] ?? '').trim();
        const status = /^(\d{3})\b/.exec(answer)?.[1] ?? /(\d{3})\s*$/.exec(answer)?.[1] ?? '000';
        if (status === '200')
          return {
            status: 'ok',
            detail: `from ${where}${via}, GET ${origin}/s/…/v1/models answered 200 (${found[1]}): the harness reaches the gateway`,
          };
        const proxy = proxyHint({ ...(sandbox.isolated ? {} : process.env), ...probeEnv }, origin);
        const error = answer
          .replace(/^\d{3}\s*/, '')
          .replace(/\d{3}\s*$/, '')
          .trim();
        return {
          status: 'fail',
          detail: `from ${where}${via}, GET ${origin}/s/…/v1/models ${status === '000' ? 'got no answer' : `answered ${status}`} (${found[1]}${error ? `: ${error.slice(0, 200)}` : ''}); every rollout's harness would fail to reach the model${proxy ? `: ${proxy}` : ''}`,
          fix: proxy
            ? 'add the gateway host to NO_PROXY (env.settings.env: { NO_PROXY: 127.0.0.1,localhost }), or unset the proxy for the harness'
            : reach
              ? "check the reach's relay in the sandbox (its origin is what the harness is given)"
              : "check that nothing in the sandbox's network blocks the host's loopback",
        };
      } finally {
        await session.close();
        await reached?.close();
      }
    } finally {
      await gateway.close();
    }
  }

  const env: HarnessEnv = {
    specificationVersion: 'v1',
    id: 'harness',
    preset,
    runSummary: (rolloutId) => summaries.get(rolloutId),
    probeGateway,
    async nextItem() {
      const task = tasks[cursor % tasks.length];
      cursor += 1;
      return task ?? null;
    },
    async evalItems() {
      return tasks;
    },
    // server.provider scripted: each task's `solution` played through the harness's shell tool.
    demoPolicy: () => createHarnessDemoPolicy({ tasks, mainTool }),
    buildMessages: (item) => [{ role: 'user', content: item.prompt }],
    // The env's tools (for the toolset selection and the reward's callTool); the harness reaches them over MCP.
    tools: () => [...envTools],
    budget: () => ({ wallClockMs: timeoutMs, maxTurns: maxRequests }),
    sandboxSpec(): SandboxSpec {
      return parsed.image ? { image: parsed.image } : {};
    },
    doRollout,
    async computeReward(item, _rollout, context): Promise<RewardResult> {
      const summary = summaries.get(context.rolloutId);
      summaries.delete(context.rolloutId);
      const verdict = await context.sandbox.exec(item.verify, {
        timeoutMs: verifyTimeoutMs,
        signal: context.signal,
      });
      const passed = verdict.exitCode === 0 && !verdict.timedOut;
      return {
        score: passed ? 1 : 0,
        success: passed,
        components: { verifier: passed ? 1 : 0 },
        details: {
          verifier: {
            command: item.verify,
            exitCode: verdict.exitCode,
            timedOut: verdict.timedOut,
            output: verdict.output.slice(-4000),
          },
          ...(summary ? { harness: summary } : {}),
        },
      };
    },
    async close() {
      const all = [...gateways.values()];
      gateways.clear();
      await Promise.allSettled(all.map(async (gateway) => (await gateway).close()));
    },
  };
  return env;
}
