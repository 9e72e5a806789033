// The harness env in a Docker sandbox with network `none` (the test run's private daemon): the
// light harness runs in the container and reaches the gateway only through the unix socket
// mounted into it, via the in-container relay. The task is fixed inside the container, the
// verifier runs there, and the GRPO row is exact. Without the socket folder the container has
// no way out: a plain TCP request to the host's gateway fails. A real CLI (qwen-code, pinned, in
// the image) in such a container reaches the env's tools at the rollout's MCP endpoint the same
// way: the MCP URL it is handed is the relay's, and the tools run in its container.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineTool, messageText, runGroup, scoredGroupRecordSchema, type ToolV1 } from '@shears/core';
import { scoredDataFromRecord } from '@shears/grpo';
import { createDockerSandboxProvider, createTerminalTool } from '@shears/tools-terminal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { managedBackend, toolCallText } from '../test/backends.js';
import { entriesOf } from '../test/exactness.js';
import { ensureNodeHarnessImage, IMAGE_HARNESS_BIN } from '../test/node-image.js';
import { createHarnessEnv, type HarnessRunSummary } from './harness-env.js';
import { createSocketReach } from './socket-reach.js';

const FIX = "sed -i 's/wrold/world/' greet.sh";

const dockerHost = process.env.SHEARS_TEST_DOCKER_HOST;
const dockerImage = process.env.SHEARS_TEST_DOCKER_IMAGE;
if ((!dockerHost || !dockerImage) && (process.env.CI === 'true' || process.env.CI === '1'))
  throw new Error(
    'CI=true but SHEARS_TEST_DOCKER_HOST/IMAGE are not set: the test Docker daemon did not start',
  );
if (!dockerHost || !dockerImage)
  console.warn(
    '\n⚠️  SKIPPING gateway harness docker tests: no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset)\n',
  );
const docker = { host: dockerHost ?? '', image: dockerImage ?? '' };

describe.skipIf(!dockerHost || !dockerImage)('the harness env in a docker sandbox with network none', () => {
  let image: string;
  let hostDir: string;
  beforeAll(async () => {
    image = await ensureNodeHarnessImage({ host: docker.host, base: docker.image, qwenCode: true });
    hostDir = await mkdtemp(join(tmpdir(), 'shears-gateway-socket-'));
  }, 180_000);
  afterAll(async () => {
    if (hostDir) await rm(hostDir, { recursive: true, force: true });
  });

  it('reaches the gateway through the mounted socket and relay; the fix happens in the container; the row is exact', async () => {
    const backend = await managedBackend({
      policy: (request) => {
        if (!request.promptText.includes('<tool_response>'))
          return `<think>\nFix it.\n</think>\n\n${toolCallText('shell', { command: FIX })}`;
        return '<think>\nFixed.\n</think>\n\nFixed.';
      },
    });
    const socket = createSocketReach({ hostDir });
    const sandboxes = createDockerSandboxProvider({
      hosts: [docker.host],
      image,
      network: 'none',
      binds: [socket.bind],
      limits: { memoryMb: 512, cpus: 1, pids: 128 },
    });
    const env = createHarnessEnv({
      command: 'node /opt/harness/light-harness.mjs',
      mainTool: 'shell',
      reach: socket.reach,
      timeoutMs: 90_000,
    });
    try {
      const record = await runGroup({
        env: {
          ...env,
          async computeReward(item, rollout, context) {
            // Inside the container: the network is loopback only, the host gateway is unreachable.
            const probe = await context.sandbox.exec(
              `node -e "fetch('${backend.scripted.origin}').then(() => console.log('reached'), (error) => console.log('unreachable', error.cause?.code ?? error.message))"`,
            );
            expect(probe.output).toContain('unreachable');
            const interfaces = await context.sandbox.exec('ls /sys/class/net');
            expect(interfaces.output.trim().split(/\s+/)).toEqual(['lo']);
            return env.computeReward(item, rollout, context);
          },
        },
        item: (await env.nextItem())!,
        server: backend.server,
        sandboxes,
        groupSize: 1,
        allEqualScores: 'keep',
        retryBudget: 0,
      });
      expect(scoredGroupRecordSchema.parse(record)).toBeTruthy();
      const rollout = record.rollouts[0]!;
      const harness = (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness;
      expect(rollout.outcome, `${rollout.outcomeReason}\n${harness?.outputTail ?? ''}`).toBe('scored');
      expect(rollout.reward).toBe(1);
      expect(harness?.exitCode).toBe(0);
      const data = scoredDataFromRecord(record);
      const tokens = data?.tokens[0] ?? [];
      const masks = data?.masks[0] ?? [];
      const sampled = entriesOf(tokens, backend.generate.generated);
      expect(sampled).toHaveLength(2);
      expect(tokens.filter((_, index) => masks[index] !== -100)).toEqual(
        sampled.flatMap((entry) => entry.tokenIds),
      );
    } finally {
      await env.close?.();
      await socket.close();
      await sandboxes.close();
      await backend.close();
    }
  }, 240_000);

  it('refuses to start a harness in a container without a way to the gateway', async () => {
    const backend = await managedBackend({ policy: () => 'unused' });
    const sandboxes = createDockerSandboxProvider({ hosts: [docker.host], image, network: 'none' });
    const env = createHarnessEnv({ command: 'node /opt/harness/light-harness.mjs' });
    try {
      const record = await runGroup({
        env,
        item: (await env.nextItem())!,
        server: backend.server,
        sandboxes,
        groupSize: 1,
        retryBudget: 0,
      });
      expect(record.rollouts[0]?.outcome).toBe('infra_failure');
      expect(record.rollouts[0]?.outcomeReason).toMatch(
        /"docker" sandbox cannot reach the gateway.*give "reach"/,
      );
      expect(backend.generate.generated).toHaveLength(0);
    } finally {
      await env.close?.();
      await sandboxes.close();
      await backend.close();
    }
  }, 120_000);

  it("a real CLI (qwen-code) in the container calls the env's tools over MCP through the relay; they run in its container; the row is exact", async () => {
    const WANTED = 'héllo, world 🌍';
    const markTool: ToolV1<{ note: string }> = defineTool({
      name: 'mark_done',
      description: 'Record that the task is done.',
      inputSchema: z.object({ note: z.string().min(1) }),
      async execute(args, context) {
        await context.sandbox.writeFile('DONE.txt', args.note);
        return `marked: ${args.note}`;
      },
    });
    // The terminal call also lists the network interfaces where it runs: the container's, loopback only.
    const command = "sed -i 's/wrold/world/' greet.sh && sh greet.sh && ls /sys/class/net";
    const turns = [
      toolCallText('mcp__shears__terminal', { command }),
      toolCallText('mcp__shears__mark_done', { note: 'fixed over MCP' }),
    ];
    const backend = await managedBackend({
      policy: (request) => {
        if (!request.promptText.includes('"name": "run_shell_command"')) return 'Fix greeting';
        const turn = turns[request.promptText.split('<|im_start|>user\n<tool_response>').length - 1];
        return turn
          ? `<think>\nUse the env's tools.\n</think>\n\n${turn}`
          : '<think>\nFixed.\n</think>\n\nFixed.';
      },
    });
    const socket = createSocketReach({ hostDir });
    const sandboxes = createDockerSandboxProvider({
      hosts: [docker.host],
      image,
      network: 'none',
      binds: [socket.bind],
      limits: { memoryMb: 1024, cpus: 1, pids: 256 },
    });
    const env = createHarnessEnv({
      preset: 'qwen-code',
      bin: IMAGE_HARNESS_BIN,
      model: 'qwen3-policy',
      reach: socket.reach,
      timeoutMs: 150_000,
      tasks: [
        {
          id: 'fix-greeting-mcp-docker',
          prompt: `greet.sh prints a typo. Fix greet.sh so that \`sh greet.sh\` prints exactly: ${WANTED}`,
          files: { 'greet.sh': '#!/bin/sh\necho "héllo, wrold 🌍"\n' },
          verify: `test "$(sh greet.sh)" = "${WANTED}" && test "$(cat DONE.txt)" = "fixed over MCP"`,
        },
      ],
      tools: [createTerminalTool(), markTool],
    });
    try {
      const record = await runGroup({
        env,
        item: (await env.nextItem())!,
        server: backend.server,
        sandboxes,
        groupSize: 1,
        allEqualScores: 'keep',
        retryBudget: 0,
      });
      const rollout = record.rollouts[0]!;
      const harness =
        (rollout.rewardDetails as { harness?: HarnessRunSummary } | undefined)?.harness ??
        env.runSummary(rollout.rolloutId);
      const context = `${rollout.outcome}: ${rollout.outcomeReason}\n${JSON.stringify(harness?.toolCalls)}\n${harness?.outputTail ?? ''}`;
      expect(rollout.outcome, context).toBe('scored');
      expect(rollout.reward, context).toBe(1);
      // The CLI reached the endpoint at the relay's address (the URL it was handed) and the calls
      // ran in its container: the terminal saw the container's loopback-only network.
      expect(
        harness?.toolCalls.map((call) => [call.name, call.error]),
        context,
      ).toEqual([
        ['terminal', null],
        ['mark_done', null],
      ]);
      expect(JSON.parse(harness!.toolCalls[0]!.result)).toMatchObject({
        exit_code: 0,
        output: `${WANTED}\nlo`,
      });
      const results = rollout.messages.filter((message) => message.role === 'tool').map(messageText);
      expect(results[1]).toContain('marked: fixed over MCP');
      const data = scoredDataFromRecord(record);
      const tokens = data?.tokens[0] ?? [];
      const masks = data?.masks[0] ?? [];
      const sampled = entriesOf(tokens, backend.generate.generated);
      expect(sampled).toHaveLength(turns.length + 1);
      expect(tokens.filter((_, index) => masks[index] !== -100)).toEqual(
        sampled.flatMap((entry) => entry.tokenIds),
      );
    } finally {
      await env.close?.();
      await socket.close();
      await sandboxes.close();
      await backend.close();
    }
  }, 240_000);
});
