// The SWE environment: each item is a bug-fix task in a real repository; each rollout works in
// its own container of the task's image (network off) with the terminal and file tools, and is
// rewarded by the task's tests, run on the rollout's change applied to a pristine copy of the
// repository in a fresh container of the same image (see swe-grading.ts).
import type { ChatMessage, EnvItem, EnvV1, Logger, RewardResult, SandboxSpec, ToolV1 } from '@shears/core';
import { InvalidArgumentError, silentLogger } from '@shears/core';
import type Dockerode from 'dockerode';
import { createSweDemoPolicy, type SweDemoPolicy, taskMarker } from './demo-policy.js';
import {
  createDockerClient,
  ensureSweBaseImage,
  ensureTaskImage,
  type ProgressCallback,
  SWE_WORKDIR,
} from './images.js';
import { type PreparedRepository, prepareRepository } from './repo.js';
import { createSweGrader, type SweGrader, type SweGraderSettings } from './swe-grading.js';
import type { SweTask } from './task-schema.js';

export interface SweItem extends EnvItem {
  task: SweTask;
}

export interface SweEnvSettings {
  tasks: readonly SweTask[];
  /** Docker client or host URL (as the docker sandbox takes it) that builds the images; default $DOCKER_HOST, else the local socket. */
  docker?: Dockerode | string;
  /** Tools offered to every rollout; default: terminal + the four file tools. */
  tools?: () => ToolV1[] | Promise<ToolV1[]>;
  partialCredit?: boolean;
  maxTurns?: number;
  limits?: SandboxSpec['limits'];
  onProgress?: ProgressCallback;
  /** Grading: the warm pool of fresh grading containers, their limits, and caps on the change read. */
  grading?: SweGraderSettings;
  /** Items in a fixed order (default) or shuffled with `random`. */
  random?: () => number;
}

export const SWE_SYSTEM_PROMPT = `You are a software engineer fixing a bug in the repository at ${SWE_WORKDIR}.
Use the tools to explore the code, reproduce the problem, edit the source and run the tests.
Do not modify the tests or the test configuration: only your changes to the source are graded, on a clean copy of the repository with the original tests and more tests you have not seen. When the fix is complete, reply with a short summary.`;

async function defaultTools(): Promise<ToolV1[]> {
  // Loaded on first use so that importing the env does not load the sandbox backends.
  const [{ createTerminalTool }, { createFileTools }] = await Promise.all([
    import('@shears/tools-terminal'),
    import('@shears/tools-file'),
  ]);
  return [createTerminalTool() as ToolV1, ...createFileTools()];
}

export interface SweEnv extends EnvV1<SweItem> {
  /** Prepared repositories and images, by task id (after setup). */
  readonly prepared: ReadonlyMap<string, { task: SweTask; prepared: PreparedRepository; image: string }>;
  /** Prepares every repository and builds the images (idempotent). */
  setup(options?: { signal?: AbortSignal; logger: Logger }): Promise<void>;
  /** The sandbox backend this env needs (its items name container images). */
  readonly preferredSandbox: 'docker';
  /** The demo policy for the scripted server (after setup): gold fixes in some rollouts, wrong moves in others. */
  demoPolicy(): Promise<SweDemoPolicy>;
}

export function createSweEnv(settings: SweEnvSettings): SweEnv {
  if (settings.tasks.length === 0)
    throw new InvalidArgumentError({ argument: 'tasks', message: 'The SWE env needs at least one task' });
  const prepared = new Map<string, { task: SweTask; prepared: PreparedRepository; image: string }>();
  let grader: SweGrader | undefined;
  let tools: ToolV1[] = [];
  let cursor = 0;
  let order = settings.tasks.map((_, index) => index);

  return {
    specificationVersion: 'v1',
    id: 'swe',
    prepared,
    preferredSandbox: 'docker',
    async demoPolicy() {
      if (prepared.size === 0)
        throw new InvalidArgumentError({
          argument: 'env',
          message: 'The SWE demo policy needs the env set up first (call setup())',
        });
      return createSweDemoPolicy({
        tasks: [...prepared.values()].map(({ task, prepared: repository }) => ({
          task,
          prepared: repository,
        })),
      });
    },
    async setup(options: { signal?: AbortSignal; logger: Logger } = { logger: silentLogger }) {
      const docker =
        typeof settings.docker === 'object' ? settings.docker : await createDockerClient(settings.docker);
      const progress = settings.onProgress ?? ((message: string) => options.logger.info(message));
      const baseTag = await ensureSweBaseImage({ docker, onProgress: progress });
      for (const [index, task] of settings.tasks.entries()) {
        if (options.signal?.aborted) break;
        if (prepared.has(task.id)) continue;
        progress(`[${index + 1}/${settings.tasks.length}] preparing ${task.id}`);
        const repository = await prepareRepository(task);
        const image = await ensureTaskImage({
          docker,
          task,
          prepared: repository,
          baseTag,
          onProgress: progress,
        });
        prepared.set(task.id, { task, prepared: repository, image });
      }
      tools = await (settings.tools ?? defaultTools)();
      if (settings.random) {
        const random = settings.random;
        order = order
          .map((index) => ({ index, key: random() }))
          .sort((a, b) => a.key - b.key)
          .map((entry) => entry.index);
      }
    },
    async nextItem() {
      const task = settings.tasks[order[cursor++ % order.length]!]!;
      return { id: task.id, prompt: task.problemStatement, task };
    },
    buildMessages(item): ChatMessage[] {
      const hints = item.task.hints ? `\n\nHints:\n${item.task.hints}` : '';
      return [
        { role: 'system', content: SWE_SYSTEM_PROMPT },
        { role: 'user', content: `${item.task.problemStatement}${hints}\n\n${taskMarker(item.task.id)}` },
      ];
    },
    tools() {
      return tools;
    },
    sandboxSpec(item) {
      const entry = prepared.get(item.task.id);
      if (!entry)
        throw new InvalidArgumentError({
          argument: 'item',
          value: item.task.id,
          message: `Task ${item.task.id} was not prepared; call setup() first`,
        });
      return {
        image: entry.image,
        workdir: SWE_WORKDIR,
        network: 'none',
        limits: settings.limits ?? { memoryMb: 2048, cpus: 1, pids: 512 },
        labels: { 'shears.swe.task': item.task.id },
      };
    },
    budget() {
      return { maxTurns: settings.maxTurns ?? 30 };
    },
    async computeReward(item, _rollout, context): Promise<RewardResult> {
      const entry = prepared.get(item.task.id);
      if (!entry)
        throw new InvalidArgumentError({
          argument: 'item',
          value: item.task.id,
          message: `Task ${item.task.id} was not prepared`,
        });
      grader ??= createSweGrader({
        ...(settings.limits ? { limits: settings.limits } : {}),
        ...settings.grading,
      });
      const grade = await grader.grade({
        sandbox: context.sandbox,
        task: entry.task,
        image: entry.image,
        gradingFiles: entry.prepared.gradingFiles,
        partialCredit: settings.partialCredit,
        signal: context.signal,
      });
      const testDropped = grade.audit.dropped.some((dropped) =>
        ['test file', 'test configuration', 'would displace a test file'].includes(dropped.reason),
      );
      return {
        score: grade.score,
        components: {
          resolved: grade.resolved ? 1 : 0,
          f2p_passed: grade.failToPass.passed,
          f2p_total: grade.failToPass.total,
          p2p_passed: grade.passToPass.passed,
          p2p_total: grade.passToPass.total,
          tests_tampered: testDropped ? 1 : 0,
          changes_dropped: grade.audit.dropped.length,
          grading_tampered: grade.audit.reason === 'grading_tampered' ? 1 : 0,
        },
        details: {
          grading: grade.audit,
          diff: grade.diff,
          droppedDiff: grade.droppedDiff,
          tests: grade.statuses,
          testOutput: grade.testOutput.slice(-4000),
          timedOut: grade.timedOut,
        },
      };
    },
    async evalItems() {
      return settings.tasks.map((task) => ({ id: task.id, prompt: task.problemStatement, task }));
    },
    async close() {
      await grader?.close();
      grader = undefined;
      for (const entry of prepared.values()) entry.prepared.dispose();
      prepared.clear();
    },
  };
}
