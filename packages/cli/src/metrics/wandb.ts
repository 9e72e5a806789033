// Weights & Biases, opt-in from the `wandb` config section: every row of the run metrics stream is
// handed to the official `@wandb/sdk` (`wandb.log`), and the run's rollouts go to W&B as one
// rollouts table at the end. The key comes only from WANDB_API_KEY.
//
// The SDK (0.5.1, the only version on npm) runs in a worker thread of its own, not in the main
// thread, for three defects of that version that would otherwise reach the run:
//  - `wandb.init` adds a SIGINT handler that calls `process.exit()`: in the main thread the first
//    Ctrl-C would end shears before its drain writes the run's files. A worker gets no signals
//    (Node delivers none through a worker's `process.on`), so shears' own drain keeps control.
//  - a failed `upsertRun` is thrown from inside a MessagePort listener, an uncaught exception
//    that would end the process; in the worker it ends the worker only, and shears reports it.
//  - its retry loop re-awaits a promise that already failed (up to 50 times, 30 s apart), so a
//    W&B server that answers 5xx holds `init` for many minutes; here `init` has a deadline.
// The worker is an `eval` worker (its source is below) so that it runs the same from the built
// package and from the sources under vitest; it imports the SDK by the absolute URL resolved here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  type PluginCheckResult,
  type ScoredGroupRecord,
  ShearsError,
  type TrajectorySinkV1,
} from '@shears/core';
import { optionalPackageCheck, packageDirectory } from '@shears/core/internal';
import type { ShearsConfig } from '../config/config-schema.js';
import { checkWandbConfig, WANDB_SDK_USE, WANDB_SDK_VERSION } from '../plan/wandb-plan.js';
import type { RunSession } from '../session.js';
import type { MetricsRow } from './metrics-schema.js';

type WandbCommand = 'process' | 'serve' | 'train' | 'evaluate';

/** Where each metrics row kind goes in W&B (the section of its charts). */
const SECTIONS: Record<MetricsRow['kind'], string> = {
  'shears.metrics.group': 'group',
  'shears.metrics.window': 'window',
  'shears.metrics.step': 'step',
  'shears.metrics.trainer': 'trainer',
  'shears.metrics.eval': 'eval',
  'shears.metrics.loop': 'loop',
};
/** Fields every row has that are not metrics (W&B keeps its own time and step). */
const SKIPPED = new Set(['kind', 'version', 'at', 'command', 'start', 'end']);

/**
 * One metrics row as the W&B history row it is logged as: `<section>/<field path>` with nested
 * objects joined by dots (`window/reward.mean`, `group/tools.bash.errorRate`), numbers, booleans
 * and strings as they are; nulls (no value: a mean of nothing) are left out, as W&B has no null.
 * `groups` (groups finished so far) and, once known, `trainer_step` are on every row, for use as
 * the x axis; W&B's own `_step` counts rows.
 */
export function wandbHistoryRow(
  row: MetricsRow,
  counters: { groups: number; trainerStep?: number },
): Record<string, string | number | boolean> {
  const section = SECTIONS[row.kind];
  const out: Record<string, string | number | boolean> = {};
  const walk = (value: unknown, path: string) => {
    if (value === null || value === undefined) return;
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') {
      out[path] = value;
      return;
    }
    if (Array.isArray(value)) {
      for (const [index, entry] of value.entries()) walk(entry, `${path}.${index}`);
      return;
    }
    if (typeof value === 'object')
      for (const [key, entry] of Object.entries(value as Record<string, unknown>))
        walk(entry, `${path}.${key}`);
  };
  for (const [key, value] of Object.entries(row)) if (!SKIPPED.has(key)) walk(value, `${section}/${key}`);
  out.groups = counters.groups;
  if (counters.trainerStep !== undefined) out.trainer_step = counters.trainerStep;
  return out;
}

export const ROLLOUT_COLUMNS = ['group', 'task', 'score', 'outcome', 'turns', 'conversation'] as const;

/** The conversation of a rollout as text, `role: content` per message, cut at `maxChars` with a marker. */
export function conversationText(messages: readonly unknown[], maxChars: number): string {
  const parts: string[] = [];
  for (const message of messages) {
    const {
      role,
      content,
      tool_calls: calls,
    } = (message ?? {}) as {
      role?: unknown;
      content?: unknown;
      tool_calls?: unknown;
    };
    const text = typeof content === 'string' ? content : content == null ? '' : JSON.stringify(content);
    const tools = Array.isArray(calls) && calls.length ? ` [tool calls: ${JSON.stringify(calls)}]` : '';
    parts.push(`${String(role ?? '?')}: ${text}${tools}`);
  }
  const whole = parts.join('\n\n');
  if (whole.length <= maxChars) return whole;
  const marker = `\n… [truncated: ${whole.length - maxChars} of ${whole.length} characters left out]`;
  return `${whole.slice(0, maxChars)}${marker}`;
}

/**
 * W&B's table JSON (`{"_type": "table", columns, data, ncols, nrows}`), the shape the Python
 * client writes for a `wandb.Table`. The JS SDK 0.5.1 has no Table type and no file upload, so
 * the table is logged inline in a history row (the Python client uploads it as a file and logs a
 * `table-file` reference instead).
 */
function rolloutsTable(rows: readonly (readonly (string | number | null)[])[]) {
  return {
    _type: 'table',
    columns: [...ROLLOUT_COLUMNS],
    data: rows.map((row) => [...row]),
    ncols: ROLLOUT_COLUMNS.length,
    nrows: rows.length,
  };
}

/**
 * `shears doctor`'s line for a `wandb` section: the package, then what the environment lacks.
 * It does not contact W&B (the first `wandb.init` of a run does, and refuses the run if it fails).
 */
export function wandbCheck(config: ShearsConfig, env: Record<string, string | undefined>): PluginCheckResult {
  const missing = optionalPackageCheck('@wandb/sdk', import.meta.url, WANDB_SDK_USE);
  if (missing) return { ...missing, name: 'wandb' };
  try {
    checkWandbConfig(config, env);
  } catch (error) {
    return {
      name: 'wandb',
      status: 'fail',
      detail: (error as Error).message,
      fix: 'export WANDB_API_KEY=<key> (or WANDB_MODE=disabled), and keep the key out of the config file',
    };
  }
  if (env.WANDB_MODE === 'disabled')
    return { name: 'wandb', status: 'warn', detail: 'WANDB_MODE=disabled: runs will not log to W&B' };
  return {
    name: 'wandb',
    status: 'ok',
    detail: `@wandb/sdk ${sdkEntry().version}, WANDB_API_KEY set, project ${config.wandb!.project} at ${env.WANDB_BASE_URL || 'https://api.wandb.ai'} (not contacted)`,
  };
}

/** The absolute URL of the SDK's ESM entry, as `import('@wandb/sdk')` from this module finds it. */
function sdkEntry(): { url: string; version: string } {
  const folder = packageDirectory('@wandb/sdk', import.meta.url);
  if (folder === undefined) throw new Error('@wandb/sdk: not found');
  const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {
    version: string;
    exports?: { '.'?: { import?: string } };
    main?: string;
  };
  const entry = manifest.exports?.['.']?.import ?? manifest.main ?? 'index.js';
  return { url: pathToFileURL(join(folder, entry)).href, version: manifest.version };
}

// The worker: init, then log and finish as the main thread asks. CommonJS, run with `eval: true`.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const sdk = await import(workerData.sdkUrl);
  const wandb = sdk.default ?? sdk.wandb;
  let run;
  try {
    run = await wandb.init(workerData.init);
  } catch (error) {
    parentPort.postMessage({ type: 'init-failed', message: String(error && error.message ? error.message : error) });
    return;
  }
  parentPort.postMessage({ type: 'ready', url: run.url(), id: run.id });
  parentPort.on('message', (message) => {
    if (message.type === 'log') wandb.log(message.data);
    else if (message.type === 'finish') {
      for (const data of message.last) wandb.log(data);
      wandb.finish(message.code).then(
        () => parentPort.postMessage({ type: 'finished' }),
        (error) => parentPort.postMessage({ type: 'finish-failed', message: String(error && error.message ? error.message : error) }),
      );
    }
  });
})().catch((error) => parentPort.postMessage({ type: 'init-failed', message: String(error && error.stack ? error.stack : error) }));
`;

class WandbError extends ShearsError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SHEARS_WANDB', ...options });
  }
}

export interface WandbRun {
  /** The run's page, as the SDK names it. */
  readonly url: string;
  /** Wraps a metrics writer (or none, when `run.metrics` is off): each row also goes to W&B. */
  writer(inner?: { write(row: unknown): void }): { write(row: unknown): void };
  /**
   * The rollouts table as a trajectory sink: every group the run writes adds its rollouts; closing
   * it logs the table and finishes the W&B run (failed when the run ended early) and stops the
   * worker. Never throws.
   */
  readonly sink: TrajectorySinkV1;
  /** Finishes the W&B run without writing the table (a run refused before it started); never throws. */
  finish(options?: { failed?: boolean }): Promise<void>;
}

/**
 * Starts the W&B run of a command (undefined without a `wandb` section, or with
 * WANDB_MODE=disabled, which is said on stderr). A W&B run that cannot start refuses the run
 * before anything runs (WandbError): the user asked for it, and no rollout has been spent yet.
 * Later failures are reported on stderr and the run goes on: its own files never depend on W&B.
 */
export async function openWandb(options: {
  session: RunSession;
  /** The run's config: its `wandb` section, and the rest as the W&B run's config (redacted). */
  config: ShearsConfig;
  command: WandbCommand;
}): Promise<WandbRun | undefined> {
  const { config, command, session: context } = options;
  const { io } = context;
  const settings = config.wandb;
  if (!settings) return undefined;
  checkWandbConfig(config, io.env);
  if (io.env.WANDB_MODE === 'disabled') {
    io.stderr('wandb: WANDB_MODE=disabled: nothing is sent to W&B (the wandb section is not used)\n');
    return undefined;
  }
  const key = io.env.WANDB_API_KEY ?? '';
  const basic = Buffer.from(`api:${key}`).toString('base64');
  const scrub = (text: string) => context.redact(text).split(key).join('***').split(basic).join('***');
  const say = (text: string) => io.stderr(`wandb: ${scrub(text)}\n`);
  const sdk = sdkEntry();
  if (sdk.version !== WANDB_SDK_VERSION)
    say(`@wandb/sdk ${sdk.version} is installed; shears was tested with ${WANDB_SDK_VERSION}`);
  const { wandb: _own, ...rest } = config;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    stdout: true,
    stderr: true,
    env: { ...process.env, ...io.env },
    workerData: {
      sdkUrl: sdk.url,
      init: {
        project: settings.project,
        ...(settings.entity ? { entity: settings.entity } : {}),
        ...(settings.name ? { name: settings.name } : {}),
        config: { command, ...(context.redact.value(rest) as object) },
      },
    },
  });
  // What the SDK prints (its "Fatal error", retries, "View run at") goes to stderr, marked.
  // The SDK writes its errors (console.error) to stderr and nothing else; each counts.
  let sdkErrors = 0;
  for (const stream of [worker.stdout, worker.stderr]) {
    const errors = stream === worker.stderr;
    let buffered = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines)
        if (line.trim()) {
          if (errors && !/^\s/.test(line)) sdkErrors++;
          say(line);
        }
    });
    stream.on('end', () => {
      if (buffered.trim()) say(buffered);
    });
  }
  let failed: string | undefined;
  let exited = false;
  const listeners = new Set<(message: { type: string; message?: string; url?: string }) => void>();
  worker.on('message', (message) => {
    for (const listener of listeners) listener(message);
  });
  const fail = (why: string) => {
    if (failed || exited) return;
    failed = why;
    say(
      `${why}; W&B logging stopped, the run goes on (its files are complete: the metrics stream and the JSONL do not depend on W&B)`,
    );
  };
  worker.on('error', (error) => fail(`the W&B SDK failed: ${error.message}`));
  worker.on('exit', (code) => {
    if (!exited) fail(`the W&B worker stopped (exit code ${code})`);
    exited = true;
  });
  const waitFor = <T extends string>(types: readonly T[], seconds: number) =>
    new Promise<{ type: T | 'timeout' | 'exit'; message?: string; url?: string }>((resolve) => {
      const timer = setTimeout(() => done({ type: 'timeout' }), seconds * 1000);
      const onExit = () => done({ type: 'exit' });
      const listener = (message: { type: string; message?: string; url?: string }) => {
        if ((types as readonly string[]).includes(message.type)) done(message as { type: T });
      };
      const done = (result: { type: T | 'timeout' | 'exit'; message?: string; url?: string }) => {
        clearTimeout(timer);
        listeners.delete(listener);
        worker.off('exit', onExit);
        resolve(result);
      };
      listeners.add(listener);
      worker.once('exit', onExit);
    });

  const started = await waitFor(['ready', 'init-failed'], settings.init_timeout_seconds);
  if (started.type !== 'ready') {
    exited = true;
    await worker.terminate();
    const why =
      started.type === 'timeout'
        ? `no answer within wandb.init_timeout_seconds (${settings.init_timeout_seconds} s)`
        : started.type === 'exit'
          ? 'the SDK stopped'
          : (started.message ?? 'unknown error');
    throw new WandbError(
      scrub(
        `wandb: could not start the W&B run (project ${settings.project}) at ${io.env.WANDB_BASE_URL || 'https://api.wandb.ai'}: ${why}. Nothing has run; check WANDB_API_KEY and the network, or set WANDB_MODE=disabled to run without W&B`,
      ),
    );
  }
  const url = started.url ?? '';
  say(`logging to ${url}`);

  let groups = 0;
  let trainerStep: number | undefined;
  let logged = 0;
  const post = (data: Record<string, unknown>) => {
    if (failed || exited) return;
    worker.postMessage({ type: 'log', data });
    logged++;
  };
  const table: Array<Array<string | number | null>> = [];
  let rolloutsSeen = 0;
  const { max_rows: maxRows, max_chars: maxChars } = settings.rollouts_table;
  const addRollouts = (record: ScoredGroupRecord) => {
    if (maxRows === 0) return;
    for (const rollout of record.rollouts) {
      rolloutsSeen++;
      // The latest rows are kept: in a long run, the end of training is what one reads.
      if (table.length === maxRows) table.shift();
      table.push([
        record.groupId,
        record.taskId,
        rollout.reward,
        rollout.outcome,
        rollout.turnsUsed,
        scrub(conversationText(rollout.messages, maxChars)),
      ]);
    }
  };
  let finishing: Promise<void> | undefined;

  const finish = (options: { failed?: boolean } = {}): Promise<void> => {
    finishing ??= (async () => {
      if (failed || exited) {
        if (!exited) await worker.terminate();
        exited = true;
        if (failed)
          say(`${logged} row(s) were handed to W&B before it failed; see the metrics stream for all of them`);
        return;
      }
      const last: Array<Record<string, unknown>> = [];
      if (maxRows > 0)
        last.push({
          rollouts: rolloutsTable(table),
          'rollouts_table/rows': table.length,
          'rollouts_table/rollouts': rolloutsSeen,
          'rollouts_table/partial': table.length < rolloutsSeen,
          groups,
        });
      worker.postMessage({ type: 'finish', last, code: options.failed ? 1 : 0 });
      const result = await waitFor(['finished', 'finish-failed'], settings.finish_timeout_seconds);
      exited = true;
      await worker.terminate();
      if (result.type === 'finished' && sdkErrors > 0)
        say(
          `finished ${url}, but the W&B SDK reported ${sdkErrors} error line(s) above: what reached W&B may be incomplete (${logged} metrics row(s) were handed to it); the metrics stream has every row`,
        );
      else if (result.type === 'finished')
        say(
          `finished ${url}: ${logged} metrics row(s)${maxRows > 0 ? `, rollouts table of ${table.length} of ${rolloutsSeen} rollout(s)` : ''}`,
        );
      else
        say(
          `the W&B run did not finish (${result.type === 'timeout' ? `no answer within wandb.finish_timeout_seconds (${settings.finish_timeout_seconds} s)` : (result.message ?? 'the SDK stopped')}); what reached W&B may be incomplete, the metrics stream has every row`,
        );
    })();
    return finishing;
  };

  let sinkClosed = false;
  const sink: TrajectorySinkV1 = {
    specificationVersion: 'v1',
    id: 'wandb',
    async write(record) {
      if (sinkClosed) throw new WandbError('wandb: the rollouts table is closed');
      addRollouts(record);
    },
    async close(options = {}) {
      sinkClosed = true;
      await finish({ failed: options.incomplete === true });
    },
  };

  return {
    url,
    writer(inner) {
      return {
        write(row: unknown) {
          inner?.write(row);
          const metricsRow = row as MetricsRow;
          if (metricsRow.kind === 'shears.metrics.group') groups++;
          const trainer = (metricsRow as { trainer?: { step?: number; stepAtEnd?: number } }).trainer;
          const step = trainer?.step ?? trainer?.stepAtEnd;
          if (typeof step === 'number') trainerStep = Math.max(trainerStep ?? step, step);
          if (metricsRow.kind === 'shears.metrics.step') trainerStep = metricsRow.step;
          post(
            wandbHistoryRow(
              context.redact.value(metricsRow),
              trainerStep === undefined ? { groups } : { groups, trainerStep },
            ),
          );
        },
      };
    },
    sink,
    finish,
  };
}
