import { SandboxError, silentLogger } from '@shears/core';
import { describeToolConformance } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { describeTerminalTools } from '../test/terminal-tools-suite.js';
import { createLocalSandboxProvider } from './local/local-sandbox-provider.js';
import { createProcessTool } from './process-tool.js';
import {
  createTerminalTool,
  dumpsResult,
  exitCodeMeaning,
  foregroundGuidance,
  stripAnsi,
  truncateOutput,
} from './terminal-tool.js';

describeTerminalTools('local', () => createLocalSandboxProvider());

describeToolConformance({
  tool: () => createTerminalTool(),
  validArguments: [
    { command: 'echo hi' },
    { command: 'sleep 0.1', timeout: 5 },
    { command: 'true', background: true },
  ],
  invalidArguments: [{}, { command: 3 }, { command: 'ls', timeout: 0 }, { command: 'ls', background: 'yes' }],
  sandboxes: createLocalSandboxProvider(),
});

describeToolConformance({
  tool: () => createProcessTool(),
  validArguments: [{ action: 'list' }, { action: 'poll', session_id: 'proc_000000000000' }],
  invalidArguments: [{}, { action: 'explode' }, { action: 'log', limit: 0 }],
  sandboxes: createLocalSandboxProvider(),
});

describe('terminal tool retries', () => {
  it('the rollout’s stop signal ends the wait between retries at once', async () => {
    const sandbox = await createLocalSandboxProvider().acquire();
    let execs = 0;
    // A real sandbox whose connection fails (the fault injected at exec): the tool retries it.
    const failing = Object.assign(Object.create(sandbox), {
      exec: async () => {
        execs += 1;
        throw new SandboxError({ message: 'connection reset by peer' });
      },
    });
    const stop = new AbortController();
    const terminal = createTerminalTool({ retryDelaysMs: [3_600_000] });
    try {
      const pending = terminal.execute(terminal.inputSchema.parse({ command: 'echo hi' }), {
        sandbox: failing,
        taskId: 'task',
        rolloutId: 'rollout',
        signal: stop.signal,
        logger: silentLogger,
        state: new Map(),
      });
      while (execs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      stop.abort();
      const output = await pending;
      expect(typeof output === 'string' ? output : output.content).toContain('connection reset by peer');
      expect(execs).toBe(1);
    } finally {
      await sandbox.dispose();
    }
  });
});

describe('terminal tool helpers', () => {
  it('decides the exit-code meaning by the last segment, skipping VAR=value and paths', () => {
    expect(exitCodeMeaning('cat x | LC_ALL=C /usr/bin/grep foo', 1)).toBe('No matches found (not an error)');
    expect(exitCodeMeaning('grep foo x && make', 1)).toBeUndefined();
    expect(exitCodeMeaning('curl -s http://x', 7)).toBe('Failed to connect to host');
    expect(exitCodeMeaning('grep foo x', 2)).toBeUndefined();
  });

  it('flags backgrounding and dev servers but not --help', () => {
    expect(foregroundGuidance('nohup ./run.sh')).toBeDefined();
    expect(foregroundGuidance('sleep 5 &')).toBeDefined();
    expect(foregroundGuidance('npm run dev')).toBeDefined();
    expect(foregroundGuidance('uvicorn app:main --help')).toBeUndefined();
    expect(foregroundGuidance('make && make test')).toBeUndefined();
  });

  it('truncates with the hermes notice and strips ANSI escapes', () => {
    const text = 'x'.repeat(200);
    expect(truncateOutput(text, 100)).toBe(
      `${'x'.repeat(40)}\n\n... [OUTPUT TRUNCATED - 100 chars omitted out of 200 total] ...\n\n${'x'.repeat(60)}`,
    );
    expect(stripAnsi('\u001b[31mred\u001b[0m')).toBe('red');
  });

  it('dumps JSON with Python separators and unicode kept', () => {
    expect(dumpsResult({ output: 'é', exit_code: 0, error: null })).toBe(
      '{"output": "é", "exit_code": 0, "error": null}',
    );
  });
});
