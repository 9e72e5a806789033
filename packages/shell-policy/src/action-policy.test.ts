import { describe, expect, it } from 'vitest';
import { ORDINARY_COMMANDS, ORDINARY_PROGRAMS } from '../test/action-policy-corpus.js';
import { EVASIONS } from '../test/action-policy-evasions.js';
import { runInBash } from '../test/run-in-bash.js';
import { createActionPolicy } from './action-policy.js';

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
  const isRoot = process.getuid?.() === 0;
  const proven = EVASIONS.filter(
    (evasion) => evasion.proof !== false && (isRoot || !evasion.line.startsWith('su ')),
  );

  it.each(proven.map((evasion) => [evasion.name, evasion.line]))(
    'bash runs %s',
    async (_name, line) => {
      const run = await runInBash(line);
      expect(run.victimGone, `exit ${run.exitCode}: ${run.output.slice(0, 300)}`).toBe(true);
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
