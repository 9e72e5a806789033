// No leaks: 64 concurrent rollouts on docker sandboxes, a quarter of the containers killed from
// outside in the middle of the reward command. Every killed rollout must come back as an
// infrastructure failure (through the real group runner), the others scored, and afterwards no
// container of the run may remain.
import { randomBytes } from 'node:crypto';
import type { EnvItem, EnvV1 } from '@shears/core';
import { runGroup, SandboxError } from '@shears/core';
import {
  createScriptedServer,
  createScriptedServerClient,
  createSeededRandom,
  type ScriptedServer,
} from '@shears/core/test';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveDockerConnection } from './docker-hosts.js';
import type { DockerSandbox } from './docker-sandbox.js';
import { createDockerSandboxProvider } from './docker-sandbox-provider.js';
import { describeDocker } from './test-docker-env.js';

const ROLLOUTS = 64;

/** Small deterministic PRNG so a failure can be replayed (mulberry32). */

describeDocker(describe, 'docker sandboxes do not leak', (docker) => {
  const client = new Dockerode(resolveDockerConnection(docker.host) as Dockerode.DockerOptions);
  let server: ScriptedServer;

  beforeAll(async () => {
    // The model answers at once; the work (and the kill) happens in the reward, in the sandbox.
    server = await createScriptedServer({ policy: () => ({ content: 'done' }) });
  });
  afterAll(async () => {
    await server.close();
  });

  it('64 concurrent sandboxes, containers killed mid-command: infra failures, nothing left behind', {
    timeout: 180_000,
  }, async () => {
    const runLabel = randomBytes(6).toString('hex');
    const provider = createDockerSandboxProvider({
      hosts: [docker.host],
      image: docker.image,
      limits: { memoryMb: 32, cpus: 0.25, pids: 32 },
      labels: { 'shears.test.run': runLabel },
    });
    const random = createSeededRandom(Number.parseInt(runLabel.slice(0, 8), 16));
    const killed = new Set<string>();
    const rewardErrors = new Map<string, unknown>();
    const kills: Promise<unknown>[] = [];
    const env: EnvV1<EnvItem> = {
      specificationVersion: 'v1',
      id: 'kill-test',
      async nextItem() {
        return { id: 'kill-task', prompt: 'go' };
      },
      buildMessages: () => [{ role: 'user', content: 'go' }],
      tools: () => [],
      async computeReward(_item, _rollout, context) {
        const sandbox = context.sandbox as DockerSandbox;
        // The command only finishes once the test drops a "go" file, so a kill always lands while
        // it is running, however slow the machine is. Surviving sandboxes get the file instead.
        const victim = random() < 0.25;
        const delay = 150 + Math.floor(random() * 600);
        if (victim) killed.add(context.rolloutId);
        kills.push(
          new Promise((resolve) => setTimeout(resolve, delay)).then(() =>
            victim ? client.getContainer(sandbox.container.id).kill() : sandbox.writeFile('/tmp/go', ''),
          ),
        );
        try {
          const result = await sandbox.exec(
            'echo started; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo finished',
            {
              timeoutMs: 120_000,
            },
          );
          return { score: result.stdout === 'started\nfinished\n' ? 1 : 0 };
        } catch (error) {
          rewardErrors.set(context.rolloutId, error);
          throw error;
        }
      },
    };
    try {
      const record = await runGroup({
        env,
        item: { id: 'kill-task', prompt: 'go' },
        server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
        sandboxes: provider,
        groupSize: ROLLOUTS,
        retryBudget: 0,
        allEqualScores: 'keep',
      });
      await Promise.all(kills);
      expect(killed.size).toBeGreaterThan(0);
      expect(record.rollouts).toHaveLength(ROLLOUTS);
      for (const rollout of record.rollouts) {
        const id = rollout.rolloutId;
        if (killed.has(id)) {
          expect(rollout.outcome, `${id} was killed`).toBe('infra_failure');
          expect(SandboxError.isInstance(rewardErrors.get(id)), `${id} surfaced a SandboxError`).toBe(true);
        } else {
          expect(rollout.outcome, `${id} was not killed`).toBe('scored');
          expect(rollout.reward).toBe(1);
        }
      }
      expect(provider.activeCount).toBe(0);
    } finally {
      await provider.close();
    }
    const left = await client.listContainers({
      all: true,
      filters: { label: [`shears.test.run=${runLabel}`] },
    });
    // Exec sessions live inside containers: with no container left, the daemon holds none for us.
    expect(left.map((container) => container.Names)).toEqual([]);
  });
});
