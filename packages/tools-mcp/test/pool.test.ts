// Pooled stdio servers (`pool: { size }`): a real SDK server (test/fixtures/bad-server.mjs, its
// `pid` tool answers its process id) shared by the rollouts of groups run by core's group runner
// in real local sandboxes. The pool never holds more than `size` processes, they run on this
// machine in the pool's scratch folder (not in any sandbox), a killed one is replaced, and after
// closeMcpTools — or the process exiting, or being killed — none is left.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type EnvV1, runGroup, type ToolV1 } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { createLocalSandboxProvider } from '@shears/tools-terminal';
import { afterAll, describe, expect, it } from 'vitest';
import { closeMcpTools, createMcpTools, safeParseMcpToolsSettings } from '../src/index.js';
import { countProcesses } from './processes.js';

const BAD_SERVER = fileURLToPath(new URL('./fixtures/bad-server.mjs', import.meta.url));
const CHILD = fileURLToPath(new URL('./fixtures/pool-child.ts', import.meta.url));
const pooled = (extra: Record<string, unknown> = {}) => ({
  transport: 'stdio' as const,
  command: process.execPath,
  args: [BAD_SERVER, 'tools'],
  include: ['pid'],
  pool: { size: 2 },
  ...extra,
});

/** Whether `pid` is a live process (a zombie is dead already; only its parent has not reaped it). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('pooled stdio MCP servers', () => {
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());

  it('settings: a pool with {workdir}, discovery or a relative cwd is refused, naming the field', () => {
    const result = safeParseMcpToolsSettings({
      servers: {
        p: pooled({
          args: [BAD_SERVER, '{workdir}'],
          env: { DATA: '{tempDir}/x' },
          cwd: 'relative',
          discovery: { command: 'x' },
        }),
      },
    });
    expect(result.success).toBe(false);
    const issues = result.error!.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    expect(issues).toContainEqual(
      expect.stringMatching(/^servers\.p\.args\.1: \{workdir\} cannot be used with pool/),
    );
    expect(issues).toContainEqual(
      expect.stringMatching(/^servers\.p\.env\.DATA: \{tempDir\} cannot be used/),
    );
    expect(issues).toContainEqual(
      expect.stringMatching(/^servers\.p\.cwd: a pooled stdio server needs an absolute cwd/),
    );
    expect(issues).toContainEqual(
      expect.stringMatching(/^servers\.p\.discovery: a pooled stdio server runs on this machine/),
    );
    expect(issues.join('\n')).toContain("outside any rollout's sandbox");
    expect(safeParseMcpToolsSettings({ servers: { p: pooled({ pool: { size: 0 } }) } }).success).toBe(false);
  });

  it('groups of rollouts share at most `size` processes on this machine; a killed one is replaced; none is left after close', async () => {
    const before = await countProcesses(BAD_SERVER);
    const tools = await createMcpTools({ servers: { pool: pooled() } });
    expect(tools.map((tool) => tool.name)).toEqual(['pool__pid']);
    const model = await createScriptedServer({
      policy: (request) => {
        const calls = request.messages.filter((message) => message.role === 'tool').length;
        return calls < 2 ? { toolCalls: [{ name: 'pool__pid', arguments: {} }] } : { content: 'done' };
      },
    });
    const seen: number[][] = [];
    const env: EnvV1 = {
      specificationVersion: 'v1',
      id: 'mcp-pool',
      nextItem: async () => ({ id: 't', prompt: 'go' }),
      buildMessages: () => [{ role: 'user', content: 'go' }],
      tools: () => tools,
      async computeReward(_item, rollout) {
        const pids = rollout.messages
          .filter((message) => message.role === 'tool')
          .map((message) => Number(message.content));
        seen.at(-1)!.push(...pids);
        return { score: pids.length === 2 && pids.every((pid) => pid > 0) ? 1 : 0 };
      },
    };
    const runOnce = async () => {
      seen.push([]);
      return runGroup({
        env,
        item: { id: 't', prompt: 'go' },
        server: createScriptedServerClient({ baseUrl: model.url, model: 'm', timeoutMs: 20_000 }),
        sandboxes: provider,
        groupSize: 6,
      });
    };
    try {
      const first = await runOnce();
      expect(first.scores).toEqual([1, 1, 1, 1, 1, 1]);
      const firstPids = [...new Set(seen[0])];
      // Twelve calls from six rollouts, served by at most two processes that outlive the rollouts.
      expect(firstPids.length).toBeGreaterThanOrEqual(1);
      expect(firstPids.length).toBeLessThanOrEqual(2);
      expect((await countProcesses(BAD_SERVER)) - before).toBe(firstPids.length);
      // They run on this machine, in the pool's scratch folder, not in a rollout's sandbox.
      for (const pid of firstPids)
        expect(readlinkSync(`/proc/${pid}/cwd`).startsWith(`${tmpdir()}/shears-mcp-pool-pool-`)).toBe(true);

      // Kill one between runs: the next group still succeeds, on a fresh process.
      const killed = firstPids[0]!;
      process.kill(killed, 'SIGKILL');
      // Wait until this process has reaped it (and so seen the pipe close); a call sent to a
      // server in the instant it dies fails as a tool error, as with per-rollout servers.
      for (let tries = 0; tries < 250 && existsSync(`/proc/${killed}`); tries++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const second = await runOnce();
      expect(second.scores).toEqual([1, 1, 1, 1, 1, 1]);
      const secondPids = [...new Set(seen[1])];
      expect(secondPids).not.toContain(killed);
      expect(secondPids.length).toBeLessThanOrEqual(2);
      expect((await countProcesses(BAD_SERVER)) - before).toBeLessThanOrEqual(2);
    } finally {
      await model.close();
      await closeMcpTools(tools);
    }
    expect(await countProcesses(BAD_SERVER)).toBe(before);
    // After close, a call is a clear error rather than a new process.
    const error = await (tools[0] as ToolV1)
      .execute({}, { signal: new AbortController().signal, state: new Map() } as never)
      .catch((thrown: Error) => thrown);
    expect(String(error)).toContain('MCP server "pool": its pool was closed');
    expect(await countProcesses(BAD_SERVER)).toBe(before);
  }, 120_000);

  it.each([
    ['exits without closing the tools (the exit hook kills them)', 'exit'],
    ['is killed with SIGKILL (the servers see their stdin close and end)', 'wait'],
  ])(
    'no pooled process outlives a process that %s',
    async (_label, mode) => {
      const child = spawn(process.execPath, ['--conditions=@shears/source', '--import', 'tsx', CHILD, mode], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        child.once('exit', (code) => reject(new Error(`child exited ${code} before printing: ${out}`)));
      });
      const pids = JSON.parse(line) as number[];
      expect(new Set(pids).size).toBe(2);
      if (mode === 'wait') child.kill('SIGKILL');
      await new Promise((resolve) =>
        child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve),
      );
      for (let tries = 0; tries < 250 && pids.some(alive); tries++)
        await new Promise((r) => setTimeout(r, 20));
      expect(pids.filter(alive)).toEqual([]);
    },
    60_000,
  );
});
