// What a run creates from its plan, once: the registry of its plugins (the CLI's, the built-in
// packages that are installed, `plugins`), its trajectory sinks (its JSONL, then `sinks`), and
// its runtimes (the run's own, when asked, and those of the loop's side runs). A part that cannot
// be created refuses the run before any rollout; what was created is released.
import type { RunPlan } from '../plan/run-plan.js';
import { importBuiltins } from '../plugin-packages.js';
import { type CreatedSinks, composeRegistry, createSinks, type RunRegistry } from './registry.js';
import { type Runtime, startRuntime } from './runtime.js';

export interface RunParts {
  /** The registry every part of the run (and `train`'s workers) is created through. */
  registry: RunRegistry;
  /** The run's sinks, created; the run's output opens them. */
  sinks: CreatedSinks;
  /** The run's runtime, when one was asked for. */
  runtime: Runtime | undefined;
  /** The loop's side runs (`loop.evaluation`, `loop.safety`), when `sides` was asked for. */
  sides: { evaluation: Runtime | undefined; capability: Runtime | undefined };
  /** Releases every runtime (the sinks are the output's). */
  close(): Promise<void>;
}

export async function openRun(
  plan: RunPlan,
  options: {
    mode: 'new' | 'replace' | 'append';
    /** The run's own runtime, with its progress (`serve`: no runtime when stopped before the API answered). */
    runtime?: { totalGroups?: number; label?: string };
    /** The loop's side runs, when the plan has them. */
    sides?: boolean;
  },
): Promise<RunParts> {
  const imported = await importBuiltins(plan.cwd);
  const registry = await composeRegistry(plan, { cwd: plan.cwd, logger: plan.session.logger, imported });
  const sinks = await createSinks(registry.registry, plan, options.mode);
  const loop = options.sides ? plan.loop : undefined;
  const requests = [
    ...(options.runtime ? [{ plan, ...options.runtime }] : []),
    ...(loop?.capabilityRun ? [{ plan: loop.capabilityRun, label: 'group' }] : []),
    ...(loop?.evaluationRun ? [{ plan: loop.evaluationRun, label: 'task' }] : []),
  ];
  const started: Runtime[] = [];
  const close = async () => {
    for (const runtime of started.reverse()) await runtime.close();
  };
  try {
    // One after the other: the side runs' envs are set up like the run's own.
    for (const { plan: runPlan, ...progress } of requests)
      started.push(await startRuntime(runPlan, { registry, ...progress }));
  } catch (error) {
    await close();
    for (const sink of [sinks.jsonl, ...sinks.configured.map((entry) => entry.sink)])
      await sink.close({ incomplete: true }).catch(() => undefined);
    throw error;
  }
  const [runtime, ...sides] = options.runtime ? started : [undefined, ...started];
  return {
    registry,
    sinks,
    runtime,
    sides: {
      capability: loop?.capabilityRun ? sides.shift() : undefined,
      evaluation: loop?.evaluationRun ? sides.shift() : undefined,
    },
    close,
  };
}
