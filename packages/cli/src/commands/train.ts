// `shears train`: the one-command loop. Starts the trajectory API (in-process), the env workers
// and the trainer command the config names; streams every log line with a prefix; stops them
// all together when the trainer exits, a worker fails or stops early, or on Ctrl-C. What the
// run needs (the tokenizer, free output paths) is checked before anything starts; every group
// goes to `run.out` and the report, as with `shears process`.
import { type ChildProcess, spawn } from 'node:child_process';
import { relative } from 'node:path';
import { createInterface } from 'node:readline';
import { createCliLogger } from '../io.js';
import { createLoopController, type LoopController } from '../loop/loop-controller.js';
import { followTrainerMetrics } from '../metrics/trainer-metrics.js';
import { writeReportFromJsonl } from '../output/run-report.js';
import { buildRunPlan, type RunPlan, workerPlan } from '../plan/run-plan.js';
import { emptyTally, mergeTallies, tallyLines } from '../progress/progress.js';
import { requireEnvChosen } from '../runtime/registry.js';
import { EXIT_CODES, formatFailures } from '../runtime/run-control.js';
import { runClusterTrain } from '../serve/cluster-serve.js';
import { describeSent } from '../serve/serve-result.js';
import { type Feed, openFeed, runServeWorker } from '../serve/serve-run.js';
import type { CommandContext } from '../session.js';
import { formatTrainSummary } from '../train/reference-trainer.js';
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

export async function trainCommand(context: CommandContext): Promise<number> {
  await requireEnvChosen(context);
  const plan = await buildRunPlan(context, 'train', { force: context.flags.force === true });
  const { io } = plan.session;
  if (plan.cluster) {
    // On a Ray cluster: the driver places the API, the trainer and the env workers.
    const code = await runClusterTrain(plan, plan.cluster);
    const { output } = plan.train!;
    if (output) for (const line of formatTrainSummary(output, io.cwd)) io.stdout(`${line}\n`);
    return code;
  }
  const feed = await openFeed(plan);
  let code: number = EXIT_CODES.error;
  try {
    code = await train(plan, feed);
    return code;
  } finally {
    await feed.close();
    await feed.output.close({ incomplete: code === EXIT_CODES.interrupted });
    await writeReportFromJsonl(plan, {
      title: `shears train · ${plan.env.name}`,
      incomplete: code === EXIT_CODES.interrupted,
    });
    const { out, report, metrics } = plan.output;
    const show = (path: string) => relative(io.cwd, path) || path;
    io.stderr(
      `train: wrote every group to ${show(out)}${report ? ` and the report to ${show(report)}` : ''}${metrics ? `; metrics in ${show(metrics)}` : ''}\n`,
    );
    const { output } = plan.train!;
    if (output) for (const line of formatTrainSummary(output, io.cwd)) io.stdout(`${line}\n`);
  }
}

async function train(plan: RunPlan, feed: Feed): Promise<number> {
  const { session } = plan;
  const { io, redact } = session;
  const { trainer, apiServer, weightSync } = plan.train!;
  const say = (prefix: string) => (line: string) => io.stderr(`${redact(`[${prefix}] ${line}`)}\n`);
  // Ctrl-C (the first) drains the workers; the trainer's exit or a worker failure stops them at once.
  const stop = new AbortController();
  const hard = new AbortController();
  const workerSignal = AbortSignal.any([session.signal, hard.signal]);
  const workerDrain = AbortSignal.any([session.drain, workerSignal]);
  const onOuterAbort = () => stop.abort(session.drain.reason);
  session.drain.addEventListener('abort', onOuterAbort, { once: true });

  let apiUrl = plan.feed!.api.url;
  let api: { close(): Promise<void> } | undefined;
  if (apiServer) {
    const { startTrajectoryApiServer } = await import('@shears/grpo');
    const server = await startTrajectoryApiServer({
      ...apiServer,
      logger: createCliLogger(io, redact, { prefix: '[api] ' }),
    });
    api = server;
    apiUrl = server.url;
    say('api')(`trajectory API listening on ${apiUrl}`);
  }

  // vLLM weight sync: the server (restart mode) is up before the trainer and workers start.
  let sync: WeightSync | undefined;
  if (weightSync) {
    sync = createWeightSync({ ...weightSync, env: io.env, log: say('vllm') });
    try {
      await sync.start();
    } catch (error) {
      await sync.close();
      await api?.close();
      throw error;
    }
  }

  const child = spawn(trainer.command[0]!, trainer.command.slice(1), {
    cwd: trainer.cwd,
    env: { ...process.env, ...io.env, ...trainer.env, SHEARS_API_URL: apiUrl, ATROPOS_SERVER_URL: apiUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so stopping it reaches its children too (torchrun ranks, workers).
    detached: process.platform !== 'win32',
  });
  // The trainer's own rows (loss, KL, entropy, reward by step) join the run's metrics stream.
  const trainerMetrics = plan.train!.trainerMetrics
    ? followTrainerMetrics({
        path: plan.train!.trainerMetrics,
        onRow: (row) => feed.output.metrics.event(row),
        onProblem: say('train'),
      })
    : undefined;
  pipeLines(child.stdout, say('trainer'));
  pipeLines(child.stderr, say('trainer'));
  const trainerExit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (done) => {
      child.once('exit', (code, signal) => done({ code, signal }));
      child.once('error', (error) => done({ code: null, signal: null, error }));
    },
  );

  // The improvement loop (config `loop`): one for all workers, so the curriculum, the replay
  // ratio and the data mix are the run's; its evaluations and capability groups stop with them.
  let loop: LoopController | undefined;
  try {
    loop = await createLoopController(
      { ...plan, session: { ...session, signal: workerSignal, drain: workerDrain } },
      { sides: feed.sides, metrics: feed.output.metrics, note: say('loop') },
    );
  } catch (error) {
    await stopChild(child, 5000);
    await trainerMetrics?.stop();
    await sync?.close();
    await api?.close();
    session.drain.removeEventListener('abort', onOuterAbort);
    throw error;
  }

  const workers = Array.from({ length: plan.train!.workers }, (_, index) => {
    const name = `worker-${index}`;
    const workerIo = { ...io, stderr: (text: string) => text.split('\n').filter(Boolean).forEach(say(name)) };
    // Each worker draws its own data: env.seed + worker index (worker-0 keeps env.seed).
    const worker = workerPlan(plan, {
      index,
      apiUrl,
      session: {
        io: workerIo,
        logger: createCliLogger(workerIo, redact),
        redact,
        signal: workerSignal,
        drain: workerDrain,
      },
    });
    return runServeWorker(worker, { feed, worker: name, ...(loop ? { loop } : {}) }).then(
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
  await trainerMetrics?.stop();
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
  session.drain.removeEventListener('abort', onOuterAbort);
  const counts = { groupsSent: 0, replaysSent: 0, bufferedByApi: 0, sentWithoutEnvId: 0 };
  // The workers' groups, tallied together: rollouts and failures by cause, dropped groups, tool errors, length-cut replies.
  const tally = emptyTally();
  for (const outcome of outcomes) {
    if (!outcome.ok) continue;
    for (const key of Object.keys(counts) as (keyof typeof counts)[]) counts[key] += outcome.result[key];
    mergeTallies(tally, outcome.result.tally);
    const failures = formatFailures(outcome.result.failures);
    if (failures) say(outcome.name)(failures.replace(/\n/g, '\n    '));
  }
  for (const line of tallyLines(tally)) say('train')(line);
  const sent = describeSent(counts);
  io.stdout(
    `train: trainer ${code === 0 ? 'finished' : 'stopped'}; workers sent ${sent.groups}${sent.notes}\n`,
  );
  return code;
}
