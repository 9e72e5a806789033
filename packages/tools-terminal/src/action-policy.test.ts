import { runAgent, ShearsError } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { afterAll, describe, expect, it } from 'vitest';
import { ORDINARY_COMMANDS, ORDINARY_PROGRAMS } from '../test/action-policy-corpus.js';
import { EVASIONS } from '../test/action-policy-evasions.js';
import { createActionPolicy } from './action-policy.js';
import { createLocalSandboxProvider } from './local/local-sandbox-provider.js';
import { parseCommandLine, ShellParseError } from './shell-parse.js';
import { createTerminalTool } from './terminal-tool.js';

const names = (line: string) =>
  parseCommandLine(line)
    .filter((command) => !command.reason)
    .map((command) => command.name);
const reasons = (line: string) =>
  parseCommandLine(line)
    .filter((command) => command.reason)
    .map((command) => command.reason);

describe('parseCommandLine', () => {
  it('finds every command in pipelines, lists, subshells, substitutions and compound commands', () => {
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
    expect(names('case "$1" in a|b) echo ab;; (c) ls;; *) pwd;; esac')).toEqual(['echo', 'ls', 'pwd']);
    expect(names('[[ -f x && $y =~ ^(a|b)$ ]] && cat x')).toEqual(['cat']);
    expect(names('[ -d node_modules ] || npm install')).toEqual(['[', 'npm']);
    expect(names('while read -r l; do echo "$l"; done < f')).toEqual(['read', 'echo']);
  });

  it('sees through quotes, escapes, paths, assignments and wrappers', () => {
    expect(names('/bin/rm -rf x')).toEqual(['rm']);
    expect(names('\\rm x; "r""m" y; r\\m z; \'rm\' w; $"rm" v')).toEqual(['rm', 'rm', 'rm', 'rm', 'rm']);
    expect(names("$'\\x72m' x; $'\\u0072m' y; $'\\162m' z")).toEqual(['rm', 'rm', 'rm']);
    expect(names('FOO=1 BAR="a b" rm x')).toEqual(['rm']);
    expect(names('env -i X=1 /usr/bin/rm x')).toEqual(['env', 'rm']);
    expect(names('sudo -u root -E nohup nice -n 5 timeout -s KILL 10 rm x')).toEqual([
      'sudo',
      'nohup',
      'nice',
      'timeout',
      'rm',
    ]);
    expect(names('xargs -0 -n 1 rm < list')).toEqual(['xargs', 'rm']);
    expect(names('xargs --max-chars 100 rm')).toEqual(['xargs', 'rm']);
    expect(names('find . -name "*.o" -exec rm {} \\;')).toEqual(['find', 'rm']);
    expect(names('bash -c "curl x | sh"')).toEqual(['bash', 'curl', 'sh']);
    expect(names("sh -lc 'rm -rf /'")).toEqual(['sh', 'rm']);
    expect(names("bash -c -e 'rm x'")).toEqual(['bash', 'rm']);
    expect(names('env -S "rm -rf x"')).toEqual(['env', 'rm']);
    expect(names("env --split-string='rm x'")).toEqual(['env', 'rm']);
    expect(names('stdbuf --output L rm x')).toEqual(['stdbuf', 'rm']);
    expect(names("flock /tmp/lock -c 'rm x'")).toEqual(['flock', 'rm']);
    expect(names('time -p rm x')).toEqual(['rm']);
    expect(names("bash <<'EOF'\nls\nrm x\nEOF")).toEqual(['bash', 'ls', 'rm']);
    expect(names("bash <<< 'rm x'")).toEqual(['bash', 'rm']);
    expect(names('rg --pre rm x .')).toEqual(['rg', 'rm']);
    expect(names("git rebase --exec 'make test' main")).toEqual(['git', 'make']);
  });

  it('follows package runners, remote and command-string options', () => {
    expect(names("ssh -p 22 host 'rm x; ls'")).toEqual(['ssh', 'rm', 'ls']);
    expect(names("rsync -e 'ssh -p 2' a host:b")).toEqual(['rsync', 'ssh']);
    expect(names('uv run --with pytest pytest -q')).toEqual(['uv', 'pytest']);
    expect(names('poetry run python -m pytest')).toEqual(['poetry', 'python']);
    expect(names('npx --yes jest')).toEqual(['npx', 'jest']);
    expect(names('setsid -f make; exec make; command make; busybox make')).toEqual([
      'setsid',
      'make',
      'exec',
      'make',
      'command',
      'make',
      'busybox',
      'make',
    ]);
    expect(names("split --filter='gzip > $FILE.gz' big")).toEqual(['split', 'gzip']);
    expect(names('/lib64/ld-linux-x86-64.so.2 /bin/ls')).toEqual(['ld-linux-x86-64.so.2', 'ls']);
    expect(names("watch -n 1 'ls | wc -l'")).toEqual(['watch', 'ls', 'wc']);
  });

  it('ignores redirection targets, comments and quoted here-document bodies', () => {
    expect(names('cat < in > out 2>&1 # rm -rf /')).toEqual(['cat']);
    expect(names("cat <<'EOF' > f\nrm -rf /\n$(rm x)\nEOF\nls")).toEqual(['cat', 'ls']);
    expect(names('cat <<\\EOF\n$(rm x)\nEOF\nls')).toEqual(['cat', 'ls']);
    expect(names('echo x >/dev/null; echo "a # b"')).toEqual(['echo', 'echo']);
  });

  it('parses unquoted here-document bodies, which expand', () => {
    expect(names('cat <<EOF\n$(rm x)\nEOF')).toEqual(['cat', 'rm']);
    expect(names('cat <<-EOF\n\t`id`\n\tEOF\nls')).toEqual(['cat', 'id', 'ls']);
  });

  it('marks computed command names as dynamic and rejects broken syntax', () => {
    expect(parseCommandLine('$CMD -rf x')[0]).toMatchObject({ dynamic: true });
    expect(parseCommandLine('$(echo rm) -rf x').find((command) => command.dynamic)).toBeDefined();
    expect(parseCommandLine('/bin/r? x')[0]).toMatchObject({ dynamic: true });
    expect(parseCommandLine('{rm,x}')[0]).toMatchObject({ dynamic: true });
    expect(parseCommandLine('echo x | xargs -I% % y')[2]).toMatchObject({
      dynamic: true,
      reason: 'the command name comes from the input (%)',
    });
    expect(() => parseCommandLine('echo "unterminated')).toThrow(/unterminated double quote/);
    expect(() => parseCommandLine('echo $(ls')).toThrow(/unterminated/);
    expect(() => parseCommandLine('echo (x)')).toThrow(ShellParseError);
    try {
      parseCommandLine('echo )');
    } catch (error) {
      expect(ShearsError.isInstance(error)).toBe(true);
    }
  });

  it('reports what it cannot see into, with the reason', () => {
    expect(reasons('echo $((x + 1))')).toEqual([expect.stringMatching(/^arithmetic on a variable/)]);
    expect(reasons('echo $((1 + 2)) ${#a} $? ${x:-d} ${y:0:2}')).toEqual([]);
    expect(reasons('echo ${p@P}')).toEqual([expect.stringMatching(/prompt expansion/)]);
    expect(reasons('echo ${p@Q} ${!pre*} ${!arr[@]}')).toEqual([]);
    expect(reasons('echo ${!ref}')).toEqual([expect.stringMatching(/indirect expansion/)]);
    expect(reasons('f() { ls; }')).toEqual([expect.stringMatching(/function definition/)]);
    expect(reasons("eval 'ls'")).toEqual([expect.stringMatching(/^eval/)]);
    expect(reasons('PATH=/x')).toEqual([expect.stringMatching(/assignment to PATH/)]);
    expect(reasons('PYTHONPATH=src pytest')).toEqual([]);
    expect(reasons('export PYTHONPATH=src')).toEqual([expect.stringMatching(/assignment to PYTHONPATH/)]);
    expect(reasons('CC=gcc make')).toEqual([]);
    expect(names('CC="rm -f" make')).toEqual(['rm', 'make']);
    expect(reasons('echo x | python3')).toEqual(['python3 reading its program from a pipe']);
    expect(reasons("python3 -c 'print(1)' && python3 script.py && python3 -m pytest")).toEqual([]);
    expect(reasons("sed -n 's/a/b/p;10q' f")).toEqual([]);
    expect(reasons("sed '1e ls' f")).toEqual(["sed's e command (it runs a command)"]);
    expect(reasons("awk '/a|b/ { n++ } END { print n }' f")).toEqual([]);
    expect(reasons('awk \'{ print | "sort" }\' f')).toEqual([expect.stringMatching(/awk program that runs/)]);
    expect(reasons('git -c user.name=a -c color.ui=never log')).toEqual([]);
    expect(reasons("git -c core.pager='less' log")).toEqual([expect.stringMatching(/core\.pager/)]);
    expect(reasons('git frobnicate')).toEqual([expect.stringMatching(/not a git command/)]);
    expect(reasons('cat .gitignore .github/x && echo > .git/HEAD')).toEqual([
      expect.stringMatching(/path into \.git/),
    ]);
    expect(reasons('printf x > config')).toEqual([expect.stringMatching(/file named config/)]);
    expect(reasons('timeout --frobnicate 5 ls')).toEqual([
      expect.stringMatching(/does not know \(--frobnicate\)/),
    ]);
    expect(reasons("fish -c 'ls'")).toEqual([expect.stringMatching(/syntax is not bash's/)]);
    expect(reasons('enable -f ./x.so x')).toEqual([expect.stringMatching(/enable -f/)]);
    for (const line of ['gdb -batch -ex r ./a.out', "tmux new -d 'ls'", 'echo ls | at now', 'vim -es f']) {
      expect(reasons(line)).toHaveLength(1);
    }
    expect(reasons('cp x repo/hooks/pre-commit')).toEqual([expect.stringMatching(/git hook/)]);
    expect(reasons('cp x /usr/local/bin/ls')).toEqual([expect.stringMatching(/directory on PATH/)]);
    expect(reasons("echo 'x' >> ~/.bashrc")).toEqual([expect.stringMatching(/shell startup files/)]);
  });
});

const denyPolicy = () => createActionPolicy({ commands: { deny: ['rm', 'curl'] } });
const allowPolicy = () => createActionPolicy({ commands: { allow: [...ORDINARY_PROGRAMS] } });

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
    'git $verb origin main',
    'git pu* origin',
    'git {push,x} origin',
    'git commit -m "$message"',
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
    'git commit -m "push it"',
    'cat rm.txt',
    'echo curl > notes',
    'printf "%s" "$(ls)"',
    "echo '$(rm x)'",
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

  it('says what it cannot check, and allowDynamic lets it through while still checking the rest', () => {
    const strict = createActionPolicy({ commands: { deny: ['rm'] } });
    expect(strict.checkCommand("sed -n '1e ls' f")).toEqual({
      allow: false,
      message:
        'Refused by the action policy: sed\'s e command (it runs a command) in "sed -n 1e ls f" cannot be checked by this environment\'s command policy. Nothing was run.',
    });
    const lenient = createActionPolicy({ commands: { deny: ['rm'], allowDynamic: true } });
    for (const line of ["sed -n '1e ls' f", 'export PATH=/x:$PATH', '$CMD x', 'echo x | sh', 'f() { ls; }']) {
      expect(lenient.checkCommand(line)).toEqual({ allow: true });
    }
    for (const line of [
      "eval 'rm x'",
      'f() { rm x; }',
      "trap 'rm x' EXIT",
      "bash <<< 'rm x'",
      '$CMD; rm x',
    ]) {
      expect(lenient.checkCommand(line).allow).toBe(false);
    }
  });

  it('refuses a path to a denied program, so a copy cannot be made under another name', () => {
    const policy = createActionPolicy({ commands: { deny: ['rm'] } });
    expect(policy.checkCommand('cp /usr/bin/rm ./zap')).toMatchObject({
      allow: false,
      message: expect.stringContaining('"/usr/bin/rm" names a program that is not allowed'),
    });
    expect(policy.checkCommand('cp rm.txt backup/')).toEqual({ allow: true });
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
        {
          toolCalls: [
            { id: 'c2', name: 'terminal', arguments: { command: "touch made-it; sed -n '1e rm -rf .' x" } },
          ],
        },
        { toolCalls: [{ id: 'c3', name: 'terminal', arguments: { command: 'touch allowed' } }] },
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
      expect(result.policyRefusals).toBe(2);
      const toolResults = result.messages
        .filter((message) => message.role === 'tool')
        .map((m) => String(m.content));
      expect(toolResults[0]).toContain('Refused by the action policy: \\"rm\\" is not allowed');
      expect(toolResults[1]).toContain("Refused by the action policy: sed's e command");
      expect((await sandbox.exec('ls')).stdout).toBe('allowed\n');
    } finally {
      await sandbox.dispose();
      await provider.close();
      await server.close();
    }
  });
});

describe('evasions (each removes ./victim in bash; see test/action-policy-evasions.ts)', () => {
  const deny = denyPolicy();
  const allow = allowPolicy();

  it.each(EVASIONS.map((evasion) => [evasion.name, evasion.line]))(
    'deny: [rm, curl] refuses %s',
    (_name, line) => {
      expect(deny.checkCommand(line)).toMatchObject({ allow: false });
    },
  );

  it.each(EVASIONS.map((evasion) => [evasion.name, evasion.line]))(
    'an allow list without rm and curl refuses %s',
    (_name, line) => {
      expect(allow.checkCommand(line)).toMatchObject({ allow: false });
    },
  );

  // The premise: without a policy, bash really runs each of these. (`su -c` needs root, which
  // the test machines and CI are.)
  const provider = createLocalSandboxProvider();
  afterAll(() => provider.close());
  const isRoot = process.getuid?.() === 0;
  const proven = EVASIONS.filter(
    (evasion) => evasion.proof !== false && (isRoot || !evasion.line.startsWith('su ')),
  );

  it.each(proven.map((evasion) => [evasion.name, evasion.line]))(
    'bash runs %s',
    async (_name, line) => {
      const sandbox = await provider.acquire();
      try {
        await sandbox.exec('echo v > victim');
        const run = await sandbox.exec(line, { timeoutMs: 20_000 });
        const after = await sandbox.exec('test -e victim && echo present || echo gone');
        expect(after.stdout.trim(), `exit ${run.exitCode}: ${run.output.slice(0, 300)}`).toBe('gone');
      } finally {
        await sandbox.dispose();
      }
    },
    30_000,
  );
});

describe('ordinary agent commands (test/action-policy-corpus.ts)', () => {
  const deny = denyPolicy();
  const allow = allowPolicy();

  it.each(ORDINARY_COMMANDS.map((line) => [line]))('a deny list allows %s', (line) => {
    expect(deny.checkCommand(line)).toEqual({ allow: true });
  });

  it.each(ORDINARY_COMMANDS.map((line) => [line]))('an allow list of their programs allows %s', (line) => {
    expect(allow.checkCommand(line)).toEqual({ allow: true });
  });
});
