// `shears train`: the one-command loop. Starts the trajectory API (in-process), the env workers
// and the trainer command the config names; streams every log line with a prefix; stops them
// all together when the trainer exits, a worker fails or stops early, or on Ctrl-C. What the
// run needs (the tokenizer, free output paths) is checked before anything starts; every group
// goes to `run.out` and the report, as with `shears process`.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ConfigError } from '@shears/core';
import { createCliLogger } from '../io.js';
import { createLoopController, type LoopController } from '../loop/loop-controller.js';
import { metricsPathFor, type RunMetrics } from '../metrics/run-metrics.js';
import { checkWandbConfig } from '../metrics/wandb.js';
import { openWorkerMetrics, type WorkerMetrics } from '../metrics/worker-metrics.js';
import { trajectoryApiServerSettings } from '../plan/api-plan.js';
import { checkRunConfig } from '../plan/env-plan.js';
import { checkLoopConfig } from '../plan/loop-plan.js';
import { EXIT_CODES, formatFailures } from '../run/run-control.js';
import { createJsonlWriter, guardOutputs } from '../run/run-output.js';
import { type CommandContext, reportPathFor, resolveOut } from '../runtime.js';
import { writeRunReport } from '../serve/run-report.js';
import { checkTrainerNeeds, describeSent, requireTokenizer, runServeLoop } from '../serve/serve-loop.js';
import {
  checkTrainOutput,
  checkWeightSync,
  formatTrainSummary,
  referencePython,
  resolveReferenceTrainer,
} from '../train/reference-trainer.js';
import { createWeightSync, type WeightSync } from '../train/weight-sync.js';

function pipeLines(stream: NodeJS.ReadableStream | null, write: (line: string) => void) {
  if (!stream) return;
  createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', write);
}

/** Sends `signal` to the trainer's whole process group (it was spawned detached, so it leads one). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined) return false;
  try {
    if (process.platform === 'win32') return child.kill(signal);
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false; // ESRCH: nobody left in the group
  }
}

function groupAlive(child: ChildProcess): boolean {
  if (child.pid === undefined) return false;
  if (process.platform === 'win32') return child.exitCode === null && child.signalCode === null;
  try {
    process.kill(-child.pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops the trainer and everything it started (torchrun ranks, data loaders): SIGTERM to its
 * process group, then SIGKILL to the group after `graceMs` if the leader or any member is still
 * there. Runs even when the trainer itself already exited, so its orphans do not outlive `train`.
 */
async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  const leaderExited = new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return done();
    child.once('exit', () => done());
  });
  if (!signalGroup(child, 'SIGTERM')) return void (await leaderExited);
  const running = () => (child.exitCode === null && child.signalCode === null) || groupAlive(child);
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && running()) await new Promise((done) => setTimeout(done, 50));
  if (running()) signalGroup(child, 'SIGKILL');
  await leaderExited;
}

/**
 * train.reference (the bundled trainer, with --output) or train.trainer (any command): exactly one.
 * With the reference trainer the config gets its command line and, colocated, its policy server.
 */
async function resolveTrainer(
  context: CommandContext,
): Promise<{ context: CommandContext; output?: string }> {
  const { config, io } = context;
  const { trainer, reference, output } = config.train;
  if (reference && trainer)
    throw new ConfigError({
      message:
        'train.reference and train.trainer are both set: train.reference starts the reference trainer (python -m shears_trainer), train.trainer.command starts your own; keep one',
      issues: [{ path: 'train', message: 'reference and trainer are exclusive', value: undefined }],
    });
  checkWeightSync(config);
  if (!reference) {
    if (!trainer)
      throw new ConfigError({
        message:
          'train.trainer.command: required for `shears train` (your own trainer, e.g. train: { trainer: { command: ["python", "trainer.py"] } }), or train.reference for the reference trainer (e.g. train: { reference: { model: ./my-model } } with --output ./my-ft)',
        issues: [{ path: 'train.trainer.command', message: 'required', value: undefined }],
      });
    if (output !== undefined)
      throw new ConfigError({
        message: `--output ${output} (train.output) is for the reference trainer (train.reference); train.trainer.command decides itself where it writes: pass the folder in its command, or remove --output`,
        issues: [{ path: 'train.output', message: 'needs train.reference', value: output }],
      });
    return { context };
  }
  const folder = checkTrainOutput(output, io.cwd);
  const model = resolve(io.cwd, reference.model);
  if (!existsSync(join(model, 'config.json')))
    throw new ConfigError({
      message: `train.reference.model: ${model} holds no config.json; name a Hugging Face model folder (config.json, safetensors, tokenizer)`,
      issues: [{ path: 'train.reference.model', message: 'not a model folder', value: reference.model }],
    });
  const python = referencePython(reference, io.cwd);
  if (python.includes('/') && !existsSync(python))
    throw new ConfigError({
      message: `train.reference: the trainer's Python ${python} does not exist; run \`shears prepare --trainer\` (creates ${reference.python ? 'a venv at train.reference.venv' : reference.venv}) or point train.reference.python at an interpreter with shears_trainer installed`,
      issues: [{ path: 'train.reference.venv', message: 'not prepared', value: reference.venv }],
    });
  const run = await resolveReferenceTrainer(config, { cwd: io.cwd, output: folder });
  return { context: { ...context, config: run.config }, output: folder };
}

export async function trainCommand(outerContext: CommandContext): Promise<number> {
  // Before the trainer is resolved: a loop setting the trainer would ignore is named first.
  checkLoopConfig(outerContext.config);
  const { context, output } = await resolveTrainer(outerContext);
  const { config, io } = context;
  checkRunConfig(config);
  checkWandbConfig(config, io.env);
  checkTrainerNeeds(config);
  await requireTokenizer(config, io.cwd, 'train');
  const out = resolveOut(context, config.run.out);
  const reportPath = config.run.report ? reportPathFor(out) : undefined;
  const metricsPath = config.run.metrics ? metricsPathFor(out) : undefined;
  const force = context.flags.force === true;
  guardOutputs({
    paths: [out, ...(reportPath ? [reportPath] : []), ...(metricsPath ? [metricsPath] : [])],
    cwd: io.cwd,
    force,
    elsewhere: '--out OTHER.jsonl',
  });
  const writer = createJsonlWriter(out, context.redact, {
    mode: force ? 'replace' : 'new',
    cwd: io.cwd,
    ...(metricsPath ? { companions: [metricsPath] } : {}),
  });
  let workerMetrics: WorkerMetrics | undefined;
  let code: number = EXIT_CODES.error;
  try {
    workerMetrics = await openWorkerMetrics(context, {
      command: 'train',
      metricsPath,
      force,
      notePrefix: 'train: ',
    });
    const { metrics } = workerMetrics;
    code = await train(context, writer, metrics, output, out);
    return code;
  } finally {
    await workerMetrics?.close();
    writer.close();
    if (reportPath)
      writeRunReport(context, {
        jsonlPath: out,
        reportPath,
        title: `shears train · ${config.env.name}`,
        incomplete: code === EXIT_CODES.interrupted,
      });
    io.stderr(
      `train: wrote every group to ${relative(io.cwd, out) || out}${reportPath ? ` and the report to ${relative(io.cwd, reportPath) || reportPath}` : ''}${metricsPath ? `; metrics in ${relative(io.cwd, metricsPath) || metricsPath}` : ''}\n`,
    );
    if (output) for (const line of formatTrainSummary(output, io.cwd)) io.stdout(`${line}\n`);
  }
}

async function train(
  context: CommandContext,
  writer: ReturnType<typeof createJsonlWriter>,
  metrics: RunMetrics,
  output: string | undefined,
  out: string,
): Promise<number> {
  const { config, io } = context;
  const trainer = config.train.trainer!;
  const say = (prefix: string) => (line: string) => io.stderr(`${context.redact(`[${prefix}] ${line}`)}\n`);
  // Ctrl-C (the first) drains the workers; the trainer's exit or a worker failure stops them at once.
  const stop = new AbortController();
  const hard = new AbortController();
  const workerSignal = AbortSignal.any([context.signal, hard.signal]);
  const workerDrain = AbortSignal.any([context.drain, workerSignal]);
  const onOuterAbort = () => stop.abort(context.drain.reason);
  context.drain.addEventListener('abort', onOuterAbort, { once: true });

  let apiUrl = config.api.url;
  let api: { close(): Promise<void> } | undefined;
  if (config.train.start_api) {
    const { startTrajectoryApiServer } = await import('@shears/grpo');
    const server = await startTrajectoryApiServer({
      ...trajectoryApiServerSettings(config.api, io.cwd),
      logger: createCliLogger(io, context.redact, { prefix: '[api] ' }),
    });
    api = server;
    apiUrl = server.url;
    say('api')(`trajectory API listening on ${apiUrl}`);
  }

  // vLLM weight sync: the server (restart mode) is up before the trainer and workers start.
  let sync: WeightSync | undefined;
  const weightSync = config.train.weight_sync;
  if (weightSync && output) {
    sync = createWeightSync({
      mode: weightSync.mode,
      baseUrl: config.server.base_url!,
      command: weightSync.command,
      loraName: weightSync.lora_name,
      initialModel: resolve(io.cwd, config.train.reference!.model),
      checkpoints: join(output, 'checkpoints'),
      healthTimeoutMs: weightSync.health_timeout_s * 1000,
      env: io.env,
      log: say('vllm'),
    });
    try {
      await sync.start();
    } catch (error) {
      await sync.close();
      await api?.close();
      throw error;
    }
  }

  const child = spawn(trainer.command[0]!, trainer.command.slice(1), {
    cwd: trainer.cwd ? resolve(io.cwd, trainer.cwd) : io.cwd,
    env: { ...process.env, ...io.env, ...trainer.env, SHEARS_API_URL: apiUrl, ATROPOS_SERVER_URL: apiUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so stopping it reaches its children too (torchrun ranks, workers).
    detached: process.platform !== 'win32',
  });
  pipeLines(child.stdout, say('trainer'));
  pipeLines(child.stderr, say('trainer'));
  const trainerExit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (done) => {
      child.once('exit', (code, signal) => done({ code, signal }));
      child.once('error', (error) => done({ code: null, signal: null, error }));
    },
  );

  // The improvement loop (config `loop`): one for all workers, so the curriculum, the replay
  // ratio and the data mix are the run's. Its evaluations and capability groups use the API's URL.
  let loop: LoopController | undefined;
  try {
    loop = await createLoopController(
      {
        ...context,
        config: { ...config, api: { ...config.api, url: apiUrl } },
        signal: workerSignal,
        drain: workerDrain,
      },
      { metrics, out, note: say('loop') },
    );
  } catch (error) {
    await stopChild(child, 5000);
    await sync?.close();
    await api?.close();
    context.drain.removeEventListener('abort', onOuterAbort);
    throw error;
  }

  const workers = Array.from({ length: config.train.workers }, (_, index) => {
    const name = `worker-${index}`;
    const workerIo = { ...io, stderr: (text: string) => text.split('\n').filter(Boolean).forEach(say(name)) };
    return runServeLoop(
      {
        ...context,
        config: {
          ...config,
          // Each worker draws its own data: env.seed + worker index (worker-0 keeps env.seed).
          env: { ...config.env, seed: config.env.seed + index },
          api: { ...config.api, url: apiUrl },
          run: { ...config.run, progress: config.run.progress === 'auto' ? 'lines' : config.run.progress },
        },
        io: workerIo,
        logger: createCliLogger(workerIo, context.redact),
        signal: workerSignal,
        drain: workerDrain,
      },
      { writer, metrics, worker: name, ...(loop ? { loop } : {}) },
    ).then(
      (result) => ({ name, ok: true as const, result }),
      (error: unknown) => ({ name, ok: false as const, error }),
    );
  });
  const firstWorkerFailure = Promise.race(
    workers.map((worker) =>
      worker.then((outcome) =>
        (outcome.ok && outcome.result.stoppedBy?.kind !== 'circuit_breaker') || stop.signal.aborted
          ? new Promise<never>(() => {})
          : outcome,
      ),
    ),
  );

  let code = 0;
  const winner = await Promise.race([
    trainerExit.then((exit) => ({ kind: 'trainer' as const, exit })),
    firstWorkerFailure.then((failure) => ({ kind: 'worker' as const, failure })),
    new Promise<{ kind: 'signal' }>((done) =>
      stop.signal.addEventListener('abort', () => done({ kind: 'signal' }), { once: true }),
    ),
    ...(sync ? [sync.failed.then((error) => ({ kind: 'sync' as const, error }))] : []),
  ]);
  if (winner.kind === 'trainer') {
    const { exit } = winner;
    if (exit.error) {
      say('train')(`could not start the trainer ${JSON.stringify(trainer.command)}: ${exit.error.message}`);
      code = 1;
    } else if (exit.code === 0) say('train')('trainer finished; stopping workers');
    else {
      say('train')(`trainer exited with ${exit.code ?? exit.signal}; stopping workers`);
      code = exit.code ?? 1;
    }
  } else if (winner.kind === 'worker') {
    const { failure } = winner;
    if (failure.ok) {
      const breaker = failure.result.stoppedBy;
      say('train')(
        `${failure.name} stopped early: ${breaker?.kind === 'circuit_breaker' ? `${breaker.outcome} repeated ${breaker.count} times: ${breaker.reason}` : 'circuit breaker'}; stopping the trainer`,
      );
      code = EXIT_CODES.circuitBreaker;
    } else {
      say('train')(
        `${failure.name} failed: ${(failure.error as Error)?.message ?? String(failure.error)}; stopping the trainer`,
      );
      code = 1;
    }
  } else if (winner.kind === 'sync') {
    say('train')(`${winner.error.message}; stopping the trainer and workers`);
    code = 1;
  } else {
    say('train')('interrupted; stopping the trainer and workers');
    code = 130;
  }
  stop.abort(new Error('train stopping'));
  // Interrupted: the workers drain (bounded by run.drain_timeout_ms); otherwise they stop now.
  if (winner.kind !== 'signal') hard.abort(new Error('train stopping'));
  await stopChild(child, 5000);
  const outcomes = await Promise.all(workers);
  await loop?.close();
  if (sync) {
    await sync.close();
    const steps = sync.synced.map((entry) => entry.step);
    say('train')(
      `weight sync (${weightSync?.mode}): ${steps.length > 0 ? `synced the checkpoints of steps ${steps.join(', ')}` : 'no checkpoint was synced'}`,
    );
  }
  await api?.close();
  context.drain.removeEventListener('abort', onOuterAbort);
  const counts = { groupsSent: 0, replaysSent: 0, bufferedByApi: 0, sentWithoutEnvId: 0 };
  for (const outcome of outcomes) {
    if (!outcome.ok) continue;
    for (const key of Object.keys(counts) as (keyof typeof counts)[]) counts[key] += outcome.result[key];
    const failures = formatFailures(outcome.result.failures);
    if (failures) say(outcome.name)(failures.replace(/\n/g, '\n    '));
  }
  const sent = describeSent(counts);
  io.stdout(
    `train: trainer ${code === 0 ? 'finished' : 'stopped'}; workers sent ${sent.groups}${sent.notes}\n`,
  );
  return code;
}
