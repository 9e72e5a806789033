// A real MCP server from npm (@modelcontextprotocol/server-memory) over stdio inside Docker
// sandboxes (SandboxV1.spawn of the docker backend: its own `docker exec` with stdin attached).
// The test image is busybox without Node, so this machine's node binary, its shared libraries and
// the repository (the server and its dependencies) are bind-mounted read-only at the same paths.
// The server's memory file lands in each container's workdir; after the run no container is left.
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type EnvV1, runGroup } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createDockerSandboxProvider, resolveDockerConnection } from '@shears/tools-terminal';
import Dockerode from 'dockerode';
import { describe, expect, it } from 'vitest';
import { createMcpTools } from '../src/index.js';

const require = createRequire(import.meta.url);
const MEMORY = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');
const REPO = realpathSync(join(import.meta.dirname, '..', '..', '..'));

const host = process.env.SHEARS_TEST_DOCKER_HOST;
const image = process.env.SHEARS_TEST_DOCKER_IMAGE;
if (!(host && image) && (process.env.CI === 'true' || process.env.CI === '1'))
  throw new Error(
    'CI=true but SHEARS_TEST_DOCKER_HOST/SHEARS_TEST_DOCKER_IMAGE are not set (run vitest from the root)',
  );

// Skipped only outside CI on a machine without the test dockerd (root vitest starts it); under CI
// a missing daemon throws above.
(host && image ? describe : describe.skip)('stdio MCP servers inside Docker sandboxes', () => {
  it('each rollout talks to its own server in its own container, and the reward sees its file', {
    timeout: 120_000,
  }, async () => {
    const node = realpathSync(process.execPath);
    const label = randomBytes(6).toString('hex');
    const provider = createDockerSandboxProvider({
      hosts: [host!],
      image: image!,
      labels: { 'shears.test.run': label },
      binds: [
        `${node}:${node}:ro`,
        '/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:ro',
        '/usr/lib64:/lib64:ro',
        `${REPO}:${REPO}:ro`,
      ],
    });
    const tools = await createMcpTools({
      servers: {
        memory: {
          transport: 'stdio',
          command: node,
          args: [MEMORY],
          env: { MEMORY_FILE_PATH: '{workdir}/memory.jsonl' },
        },
      },
    });
    const model = await createScriptedServer({
      policy: (request) => {
        if (request.messages.some((message) => message.role === 'tool')) return { content: 'done' };
        return {
          toolCalls: [
            {
              name: 'memory__create_entities',
              arguments: {
                entities: [{ name: 'alice', entityType: 'person', observations: ['in a container'] }],
              },
            },
          ],
        };
      },
    });
    const env: EnvV1<{ id: string; prompt: string }> = {
      specificationVersion: 'v1',
      id: 'mcp-docker-test',
      nextItem: async () => ({ id: 'task-1', prompt: 'go' }),
      buildMessages: () => [{ role: 'user', content: 'remember alice' }],
      tools: () => tools,
      async computeReward(_item, _rollout, context) {
        // The effect is in this container's workdir, written by the server running there.
        const file = await context.sandbox.exec('cat memory.jsonl');
        const graph = JSON.parse(await context.callTool('memory__read_graph', {})) as {
          entities: Array<{ name: string }>;
        };
        return { score: file.stdout.includes('"alice"') && graph.entities.length === 1 ? 1 : 0 };
      },
    };
    try {
      const record = await runGroup({
        env,
        item: { id: 'task-1', prompt: 'go' },
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 30_000 }),
        sandboxes: provider,
        groupSize: 2,
      });
      expect(record.rollouts.map((rollout) => rollout.outcomeReason ?? rollout.outcome)).toEqual([
        'scored',
        'scored',
      ]);
      expect(record.scores).toEqual([1, 1]);
    } finally {
      await model.close();
      await provider.close();
    }
    const docker = new Dockerode(resolveDockerConnection(host!) as Dockerode.DockerOptions);
    const left = await docker.listContainers({ all: true, filters: { label: [`shears.test.run=${label}`] } });
    expect(left).toEqual([]);
  });
});
