import { runAgent } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import { createActionPolicy } from './action-policy.js';
import { createLocalSandboxProvider } from './local/local-sandbox-provider.js';
import { parseCommandLine } from './shell-parse.js';
import { createTerminalTool } from './terminal-tool.js';

const names = (line: string) => parseCommandLine(line).map((command) => command.name);

describe('parseCommandLine', () => {
  it('finds every command in pipelines, lists, subshells and substitutions', () => {
    expect(names('ls -la | grep x && echo ok || true; pwd & wait')).toEqual([
      'ls',
      'grep',
      'echo',
      'true',
      'pwd',
      'wait',
    ]);
    expect(names('(cd /tmp && make) ; { echo a; echo b; }')).toEqual(['cd', 'make', 'echo', 'echo']);
    expect(names('echo "$(whoami) `hostname`" $(id -u)')).toEqual(['whoami', 'hostname', 'id', 'echo']);
    expect(names('diff <(sort a) >(tee b)')).toEqual(['sort', 'tee', 'diff']);
    expect(names('if test -f x; then cat x; else touch x; fi')).toEqual(['test', 'cat', 'touch']);
    expect(names('for f in *.txt; do wc -l "$f"; done')).toEqual(['wc']);
  });

  it('sees through quotes, escapes, paths, assignments and wrappers', () => {
    expect(names('/bin/rm -rf x')).toEqual(['rm']);
    expect(names('\\rm x; "r""m" y; r\\m z; \'rm\' w')).toEqual(['rm', 'rm', 'rm', 'rm']);
    expect(names("$'\\x72m' x")).toEqual(['rm']);
    expect(names('FOO=1 BAR=2 rm x')).toEqual(['rm']);
    expect(names('env -i X=1 /usr/bin/rm x')).toEqual(['env', 'rm']);
    expect(names('sudo -u root -E nohup nice -n 5 timeout -s KILL 10 rm x')).toEqual([
      'sudo',
      'nohup',
      'nice',
      'timeout',
      'rm',
    ]);
    expect(names('xargs -0 -n 1 rm < list')).toEqual(['xargs', 'rm']);
    expect(names('find . -name "*.o" -exec rm {} \\;')).toEqual(['find', 'rm']);
    expect(names('bash -c "curl x | sh"')).toEqual(['bash', 'curl', 'sh']);
    expect(names("sh -lc 'rm -rf /'")).toEqual(['sh', 'rm']);
    expect(names('eval "rm -rf x"')).toEqual(['eval', 'rm']);
    expect(names('env -S "rm -rf x"')).toEqual(['env', 'rm']);
    expect(names('f() { rm -rf x; }; f')).toEqual(['rm', 'f']);
  });

  it('ignores redirection targets, comments and here-document bodies', () => {
    expect(names('cat < in > out 2>&1 # rm -rf /')).toEqual(['cat']);
    expect(names('cat <<EOF > f\nrm -rf /\nEOF\nls')).toEqual(['cat', 'ls']);
    expect(names('echo x >/dev/null; echo "a # b"')).toEqual(['echo', 'echo']);
  });

  it('marks computed command names as dynamic and rejects broken syntax', () => {
    expect(parseCommandLine('$CMD -rf x')[0]).toMatchObject({ dynamic: true });
    expect(parseCommandLine('$(echo rm) -rf x').find((command) => command.dynamic)).toBeDefined();
    expect(parseCommandLine('/bin/r? x')[0]).toMatchObject({ dynamic: true });
    expect(() => parseCommandLine('echo "unterminated')).toThrow(/unterminated double quote/);
    expect(() => parseCommandLine('echo $(ls')).toThrow(/unterminated/);
  });
});

describe('createActionPolicy', () => {
  const deny = createActionPolicy({
    commands: { deny: ['rm', 'git push', 'curl'] },
    tools: { deny: ['web_search'] },
  });

  it.each([
    'rm -rf /',
    '/bin/rm -rf /',
    '\\rm x',
    '"rm" x',
    "r''m x",
    'ls; rm x',
    'ls && rm x',
    'false || rm x',
    'ls | xargs rm',
    'echo $(rm x)',
    'echo `rm x`',
    'echo "$(rm x)"',
    '(rm x)',
    '{ rm x; }',
    'env X=1 rm x',
    'sudo rm x',
    'sudo -u bob env -i nohup rm x',
    'X=1 rm x',
    'bash -c "rm x"',
    "sh -c 'ls; rm x'",
    'eval rm x',
    'find . -delete -exec rm {} +',
    'timeout 5 rm x',
    'cat <(rm x)',
    'git -C repo push origin main',
    'curl http://127.0.0.1 | sh',
    'busybox rm x',
    'x=rm; $x -rf /',
    '$(printf rm) x',
    'echo "unterminated',
  ])('refuses %s', (line) => {
    const decision = deny.checkCommand(line);
    expect(decision.allow).toBe(false);
    if (!decision.allow) expect(decision.message).toMatch(/^Refused by the action policy: /);
  });

  it.each([
    'ls -la',
    'echo rm is a word',
    'grep -r "rm -rf" .',
    'git status',
    'cat rm.txt',
    'echo curl > notes',
    'printf "%s" "$(ls)"',
  ])('allows %s', (line) => {
    expect(deny.checkCommand(line)).toEqual({ allow: true });
  });

  it('with an allow list, every command in the line must be allowed', () => {
    const allow = createActionPolicy({
      commands: { allow: ['ls', 'cat', 'git status', 'python3 -m pytest'] },
    });
    expect(allow.checkCommand('ls -la && cat x')).toEqual({ allow: true });
    expect(allow.checkCommand('git status --short')).toEqual({ allow: true });
    expect(allow.checkCommand('python3 -m pytest -q')).toEqual({ allow: true });
    expect(allow.checkCommand('ls; python3 -c "import os"').allow).toBe(false);
    expect(allow.checkCommand('git push').allow).toBe(false);
    expect(allow.checkCommand('cat $(whoami)').allow).toBe(false);
    const refused = allow.checkCommand('ls | wc -l');
    expect(refused).toEqual({
      allow: false,
      message:
        'Refused by the action policy: "wc" is not on this environment\'s list of allowed commands (ls, cat, git status, python3 -m pytest). Nothing was run.',
    });
  });

  it('checks tools and the terminal command argument, counting refusals', () => {
    const policy = createActionPolicy({
      commands: { deny: ['rm'] },
      tools: { allow: ['terminal', 'read_file'] },
    });
    expect(policy.beforeToolCall({ name: 'read_file', arguments: { path: 'rm' } })).toEqual({ allow: true });
    expect(policy.beforeToolCall({ name: 'terminal', arguments: { command: 'rm -rf /' } }).allow).toBe(false);
    expect(policy.beforeToolCall({ name: 'web_search', arguments: {} })).toMatchObject({
      allow: false,
      message:
        'Refused by the action policy: the tool "web_search" is not allowed in this environment (allowed: terminal, read_file).',
    });
    expect(policy.refusals).toBe(2);
  });

  it('rejects bad settings naming the valid keys', () => {
    expect(() => createActionPolicy({ commands: { denny: ['rm'] } } as never)).toThrow(
      /commands\.allow, commands\.deny/,
    );
  });

  it('refuses before execution inside the agent loop and counts it in the trajectory', async () => {
    const server = await createScriptedServer({
      replies: [
        {
          toolCalls: [{ id: 'c1', name: 'terminal', arguments: { command: 'touch made-it; /bin/rm -rf .' } }],
        },
        { toolCalls: [{ id: 'c2', name: 'terminal', arguments: { command: 'touch allowed' } }] },
        { content: 'done' },
      ],
    });
    const provider = createLocalSandboxProvider();
    const sandbox = await provider.acquire();
    try {
      const client = createScriptedServerClient({
        baseUrl: server.url,
        model: 'test-model',
        timeoutMs: 5_000,
      });
      const policy = createActionPolicy({ commands: { deny: ['rm'] } });
      const result = await runAgent({
        server: client,
        messages: [{ role: 'user', content: 'go' }],
        tools: [createTerminalTool()],
        sandbox,
        beforeToolCall: policy.beforeToolCall,
      });
      expect(result.policyRefusals).toBe(1);
      const firstToolResult = result.messages.find((message) => message.role === 'tool');
      expect(String(firstToolResult?.content)).toContain(
        'Refused by the action policy: \\"rm\\" is not allowed',
      );
      expect((await sandbox.exec('ls')).stdout).toBe('allowed\n');
    } finally {
      await sandbox.dispose();
      await provider.close();
      await server.close();
    }
  });
});
