// Behaviour of the `terminal` and `process` tools, run against every sandbox backend that can
// exist here (local, ssh, docker): what the model sends, what JSON it gets back.
import type { SandboxProviderV1, SandboxV1, ToolContext, ToolOutput } from '@shears/core';
import { silentLogger } from '@shears/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProcessTool } from '../src/process-tool.js';
import { createTerminalTool } from '../src/terminal-tool.js';

export function describeTerminalTools(
  name: string,
  makeProvider: () => SandboxProviderV1 | Promise<SandboxProviderV1>,
  options: { unavailable?: string } = {},
): void {
  const suite = options.unavailable ? describe.skip : describe;
  suite(`terminal and process tools on ${name}${options.unavailable ? ` (skipped: ${options.unavailable})` : ''}`, () => {
    let provider: SandboxProviderV1;
    let sandbox: SandboxV1;
    let context: ToolContext;
    const terminal = createTerminalTool({ retryDelaysMs: [0] });
    const processTool = createProcessTool({ pollIntervalMs: 50 });

    beforeAll(async () => {
      provider = await makeProvider();
    }, 120_000);
    afterAll(async () => {
      await provider?.close();
    });
    const fresh = async () => {
      sandbox = await provider.acquire();
      context = {
        sandbox,
        taskId: 't',
        rolloutId: 'r',
        signal: new AbortController().signal,
        logger: silentLogger,
        state: new Map(),
      };
    };
    afterEach(async () => {
      await sandbox?.dispose();
    });

    const run = async (tool: typeof terminal | typeof processTool, args: Record<string, unknown>) => {
      const output = (await tool.execute(tool.inputSchema.parse(args) as never, context)) as
        | ToolOutput
        | string;
      const text = typeof output === 'string' ? output : output.content;
      return { text, json: JSON.parse(text) as Record<string, any> };
    };

    it('returns output and exit code as hermes JSON, with exit_code_meaning for benign codes', async () => {
      await fresh();
      const ok = await run(terminal, { command: 'echo hello; echo oops >&2' });
      expect(ok.json).toMatchObject({ exit_code: 0, error: null });
      expect(Object.keys(ok.json)).toEqual(['output', 'exit_code', 'error']);
      expect(ok.json.output).toContain('hello');
      expect(ok.json.output).toContain('oops');
      expect(ok.text.startsWith('{"output": ')).toBe(true);
      const grep = await run(terminal, { command: 'echo abc | grep zzz' });
      expect(grep.json).toEqual({
        output: '',
        exit_code: 1,
        error: null,
        exit_code_meaning: 'No matches found (not an error)',
      });
      expect((await run(terminal, { command: 'exit 3' })).json.exit_code).toBe(3);
    });

    it('times out with exit code 124 and the timeout notice, and caps foreground timeouts at 600 s', async () => {
      await fresh();
      const timedOut = await run(terminal, { command: 'echo partial; sleep 30', timeout: 1 });
      expect(timedOut.json.exit_code).toBe(124);
      expect(timedOut.json.output).toBe('partial\n\n[Command timed out after 1s]');
      const tooLong = await run(terminal, { command: 'sleep 1', timeout: 601 });
      expect(tooLong.json.error).toBe(
        'Foreground timeout 601s exceeds the maximum of 600s. Use background=true with notify_on_complete=true for long-running commands.',
      );
    });

    it('runs in workdir and refuses foreground backgrounding and odd workdirs', async () => {
      await fresh();
      await run(terminal, { command: 'mkdir -p sub' });
      expect((await run(terminal, { command: 'pwd', workdir: `${sandbox.workdir}/sub` })).json.output).toBe(
        `${sandbox.workdir}/sub`,
      );
      const guarded = await run(terminal, { command: 'python3 -m http.server 8000 &' });
      expect(guarded.json).toMatchObject({ exit_code: -1, status: 'error' });
      expect(guarded.json.error).toContain('background=true');
      const blocked = await run(terminal, { command: 'ls', workdir: '/tmp; rm -rf /' });
      expect(blocked.json).toMatchObject({ exit_code: -1, status: 'blocked' });
    });

    it('truncates long output to 40% head and 60% tail', async () => {
      await fresh();
      const result = await run(createTerminalTool({ maxOutputChars: 1000 }), { command: 'seq 1 3000' });
      expect(result.json.output).toContain('[OUTPUT TRUNCATED - ');
      expect(result.json.output.startsWith('1\n2\n3\n')).toBe(true);
      expect(result.json.output.endsWith('2999\n3000')).toBe(true);
    });

    it('starts background processes and lists, polls, logs, waits for and kills them', async () => {
      await fresh();
      const started = await run(terminal, {
        command: 'for i in 1 2 3; do echo line-$i; done; sleep 0.3; echo finished',
        background: true,
      });
      expect(started.json).toMatchObject({ output: 'Background process started', exit_code: 0, error: null });
      const sessionId = started.json.session_id as string;
      expect(sessionId).toMatch(/^proc_[0-9a-f]{12}$/);
      const waited = await run(processTool, { action: 'wait', session_id: sessionId, timeout: 20 });
      expect(waited.json).toMatchObject({ status: 'exited', exit_code: 0 });
      expect(waited.json.output).toContain('finished');
      // A failing background command reports its own exit code, not a missing one.
      const failing = await run(terminal, { command: 'echo bad; exit 3', background: true });
      const failed = await run(processTool, {
        action: 'wait',
        session_id: failing.json.session_id,
        timeout: 20,
      });
      expect(failed.json).toMatchObject({ status: 'exited', exit_code: 3 });
      const log = await run(processTool, { action: 'log', session_id: sessionId, offset: 1, limit: 2 });
      expect(log.json.output).toBe('line-2\nline-3');
      expect(log.json.total_lines).toBe(4);

      const server = await run(terminal, { command: 'sleep 300', background: true });
      const serverId = server.json.session_id as string;
      expect((await run(processTool, { action: 'poll', session_id: serverId })).json.status).toBe('running');
      const listed = await run(processTool, { action: 'list' });
      expect(listed.json.count).toBe(3);
      const killed = await run(processTool, { action: 'kill', session_id: serverId });
      expect(killed.json.status).toBe('killed');
      expect((await run(processTool, { action: 'poll', session_id: serverId })).json.status).toBe('killed');
      const unknown = await run(processTool, { action: 'poll', session_id: 'proc_nope' });
      expect(unknown.json.error).toMatch(/No background process 'proc_nope'/);
    });
  });
}
