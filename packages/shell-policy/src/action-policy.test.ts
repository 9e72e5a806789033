import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ORDINARY_COMMANDS, ORDINARY_PROGRAMS } from '../test/action-policy-corpus.js';
import { EVASIONS, WRAPPER_ROUTES } from '../test/action-policy-evasions.js';
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

  it('checks the files file tools write as files a command writes (issue 36 §4)', () => {
    const policy = createActionPolicy({ commands: { deny: ['rm'] } });
    const write = (path: string, content = 'x\n') =>
      policy.checkToolCall({ name: 'write_file', arguments: { path, content } });
    for (const path of [
      '.git/config',
      'repo/.git/hooks/pre-commit',
      '/root/.gitconfig',
      '/home/agent/.config/git/config',
      'bare.git/config',
      'hooks/post-checkout',
      '/root/.bashrc',
      '/home/agent/.profile',
      '.npmrc',
      '/root/.config/pip/pip.conf',
      '/root/.curlrc',
      '/root/.wgetrc',
      '/root/.ssh/config',
      '/root/.ssh/rc',
      '/usr/lib/python3/dist-packages/evil.pth',
      '/root/.local/lib/python3.11/site-packages/usercustomize.py',
      'sitecustomize.py',
      '/usr/local/bin/ls',
      '/root/.local/bin/pytest',
      'node_modules/.bin/jest',
      '.venv/bin/pytest',
      '.cargo/config.toml',
      '.husky/pre-commit',
    ]) {
      expect(write(path), path).toMatchObject({
        allow: false,
        message: expect.stringMatching(
          /^Refused by the action policy: write_file would write ".+", .+ Nothing was written\.$/,
        ),
      });
    }
    const patch = (text: string) =>
      policy.checkToolCall({ name: 'patch', arguments: { mode: 'patch', patch: text } });
    expect(
      patch('*** Begin Patch\n*** Update File: .git/config\n@@\n+\thooksPath = h\n*** End Patch').allow,
    ).toBe(false);
    expect(
      patch('*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch').allow,
    ).toBe(false);
    expect(
      patch(
        '*** Begin Patch\n*** Update File: notes.txt\n*** Move to: .git/config\n@@\n-a\n+b\n*** End Patch',
      ).allow,
    ).toBe(false);
    expect(patch('*** Begin Patch\n*** Move File: notes.txt -> hooks/pre-push\n*** End Patch').allow).toBe(
      false,
    );
    expect(patch('--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n x\n+y\n').allow).toBe(false);
    expect(
      policy.checkToolCall({
        name: 'patch',
        arguments: { mode: 'replace', path: '.git/config', old_string: 'a', new_string: 'b' },
      }).allow,
    ).toBe(false);
    // Ordinary files, and patches of them, are written.
    for (const path of [
      'src/app.py',
      'README.md',
      'config.yaml',
      'configs/train.json',
      '.gitignore',
      '.github/workflows/ci.yml',
      'Makefile',
      'conftest.py',
      'tests/test_git_config.py',
    ]) {
      expect(write(path), path).toEqual({ allow: true });
    }
    expect(patch('*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch')).toEqual({
      allow: true,
    });
    expect(patch('--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-a\n+b\n')).toEqual({ allow: true });
    // What a file holds is data: a README may mention .git/config.
    expect(write('README.md', 'Do not edit .git/config by hand.')).toEqual({ allow: true });
  });

  it('checks file writes only with command rules, lets them through with allowDynamic, and reads other tools by setting', () => {
    const write = { name: 'write_file', arguments: { path: '.git/config', content: '' } };
    expect(createActionPolicy({ tools: { deny: ['web_search'] } }).checkToolCall(write)).toEqual({
      allow: true,
    });
    expect(
      createActionPolicy({ commands: { deny: ['rm'], allowDynamic: true } }).checkToolCall(write),
    ).toEqual({
      allow: true,
    });
    const custom = createActionPolicy({
      commands: { deny: ['rm'] },
      fileWriteArguments: { save: ['filename'] },
    });
    expect(custom.checkToolCall({ name: 'save', arguments: { filename: '/root/.bashrc' } }).allow).toBe(
      false,
    );
    expect(custom.checkToolCall(write)).toEqual({ allow: true });
  });

  it('screens literal interpreter code for names, and says it cannot read it (README)', () => {
    const policy = createActionPolicy({ commands: { deny: ['rm'] } });
    expect(policy.checkCommand('python3 -c \'import os; os.system("rm x")\'').allow).toBe(false);
    // A name built at run time gets past a screen of names: the sandbox is the boundary.
    expect(
      policy.checkCommand("python3 -c \"import os; f = os.__dict__['sys' + 'tem']; f('rm x')\""),
    ).toEqual({
      allow: true,
    });
    // A script file, and the file a tool runs as its program, are not read.
    expect(policy.checkCommand('python3 script.py && make test && npm test')).toEqual({ allow: true });
    for (const path of ['Makefile', 'package.json', 'conftest.py']) {
      expect(policy.checkToolCall({ name: 'write_file', arguments: { path, content: 'rm -rf /' } })).toEqual({
        allow: true,
      });
    }
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

describe("wrapper routes, from the programs' documentation (test/action-policy-evasions.ts WRAPPER_ROUTES)", () => {
  const deny = denyPolicy();
  const allow = allowPolicy();

  it.each(WRAPPER_ROUTES.map((route) => [route.name, route.line]))(
    'deny: [rm, curl] refuses %s',
    (_name, line) => {
      expect(deny.checkCommand(line)).toMatchObject({ allow: false });
    },
  );

  it.each(WRAPPER_ROUTES.map((route) => [route.name, route.line]))(
    'an allow list without rm and curl refuses %s',
    (_name, line) => {
      expect(allow.checkCommand(line)).toMatchObject({ allow: false });
    },
  );

  const installed = (program: string) =>
    spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
  const proven = WRAPPER_ROUTES.filter((route) => route.proof !== false);
  for (const route of proven) {
    // A proof whose program is missing skips on a developer's machine; CI provisions every one
    // (scripts/provision-test.sh), so there a missing program fails instead of hiding the route.
    it.skipIf(route.needs !== undefined && !installed(route.needs) && process.env.CI !== 'true')(
      `bash runs ${route.name}`,
      async () => {
        const run = await runInBash(route.line);
        expect(run.victimGone, `exit ${run.exitCode}: ${run.output.slice(0, 300)}`).toBe(true);
      },
      30_000,
    );
  }
});

describe('every wrapper and route the README names', () => {
  const deny = createActionPolicy({ commands: { deny: ['rm'] } });
  // Wrappers: the command they run is found (and is rm).
  const wrappers = [
    'setpriv rm x',
    'setarch x86_64 rm x',
    'linux32 rm x',
    'x86_64 rm x',
    'unshare -r rm x',
    'nsenter -t 1 -m rm x',
    'setsid -w rm x',
    'ionice -c3 rm x',
    'taskset 1 rm x',
    'chrt 1 rm x',
    'prlimit --nofile=1 rm x',
    'choom -n 1 rm x',
    'uclampset -m 0 rm x',
    'enosys rm x',
    'pipesz rm x',
    'nice -n5 rm x',
    'nohup rm x',
    'timeout 5 rm x',
    'stdbuf -oL rm x',
    'chroot / rm x',
    '/usr/bin/time -v rm x',
    'strace -f rm x',
    'ltrace -f rm x',
    'valgrind --tool=none rm x',
    'doas rm x',
    'pkexec rm x',
    'tini rm x',
    'dumb-init rm x',
    'gosu u rm x',
    'su-exec u rm x',
    'ssh-agent rm x',
    'dbus-run-session rm x',
    'dbus-launch rm x',
    'xvfb-run -a rm x',
    'fakeroot rm x',
    'fakechroot rm x',
    'faketime 1 rm x',
    'bwrap --ro-bind / / rm x',
    'firejail --quiet rm x',
    'proot -r / rm x',
    'numactl -l rm x',
    'cgexec -g cpu:/ rm x',
    'systemd-inhibit rm x',
    'sshpass -p p rm x',
    'rlwrap rm x',
    'setuidgid u rm x',
    'envuidgid u rm x',
    'softlimit -m 1 rm x',
    'setlock l rm x',
    'chpst -u u rm x',
    'chronic rm x',
    'ifne rm x',
    'lckdo l rm x',
    'zrun rm x.gz',
    'sudo rm x',
    'su -c "rm x"',
    'runuser -u u -- rm x',
    'env X=1 rm x',
    "env -S 'rm x'",
    'echo x | xargs rm',
    'find . -exec rm {} +',
    'fd -x rm',
    "flock l -c 'rm x'",
    "script -c 'rm x' /dev/null",
    "watch 'rm x'",
    "capsh -- -c 'rm x'",
    'capsh == -- -c "rm x"',
    'start-stop-daemon --start --exec /usr/bin/env -- rm x',
    'busybox rm x',
    'exec rm x',
    'command rm x',
    '/lib64/ld-linux-x86-64.so.2 /bin/rm x',
    'npx rm x',
    'uv run rm x',
    'poetry run rm x',
    'bundle exec rm x',
    'rustup run stable rm x',
    'mise exec -- rm x',
    'nix develop -c rm x',
    'cross-env A=1 rm x',
  ];
  it.each(wrappers)('finds the command %s runs', (line) => {
    expect(deny.checkCommand(line)).toMatchObject({
      allow: false,
      message: expect.stringMatching(/"(?:rm|\/bin\/rm)" (?:is|names a program that is) not allowed/),
    });
  });

  // Routes it cannot check: refused with the reason.
  const routes = [
    'python3 -c \'import os; os.system("ls")\'',
    "perl -e 'print `ls`'",
    'perl -MIPC::Open3 -e 1',
    'node -e \'require("child_process").exec("ls")\'',
    "ruby -e 'puts `ls`'",
    'php -r \'shell_exec("ls");\'',
    'lua -e \'os.execute("ls")\'',
    'Rscript -e \'system("ls")\'',
    "julia -e 'run(`ls`)'",
    'bash --rcfile rc -ic true',
    'bash --init-file rc -i -c true',
    'sqlite3 -init rc db',
    'ssh -F cfg host',
    'man -C m.conf ls',
    'man -P less ls',
    'wget --config=w.rc http://127.0.0.1/',
    'wget -e use_askpass=x http://127.0.0.1/',
    'gcc -B./bin x.c',
    'gcc -specs=x.specs x.c',
    'gcc -fplugin=./p.so x.c',
    'apt-get -o APT::Update::Post-Invoke::=x update',
    'go env -w GOFLAGS=-x',
    'xterm -e ls',
    'run-parts d',
    'sudo -e f',
    'strace -E LD_PRELOAD=x ls',
    'bwrap --setenv LD_PRELOAD x ls',
    'cross-env NODE_OPTIONS=--require=x node a.js',
    'echo x > .pnpmfile.cjs',
    'echo x > bunfig.toml',
    'echo x > .yarnrc.yml',
    'echo x > ~/.gdbinit',
    'echo x > ~/.Rprofile',
    'echo x > ~/.psqlrc',
    'echo x > ~/.sqliterc',
    'echo x > ~/.vimrc',
    'echo x > ~/.lessfilter',
    'echo x > /etc/profile.d/x.sh',
    'echo x >> ~/.ssh/authorized_keys',
    'echo x > ~/.ssh/rc',
    'echo x >> ~/.bash_aliases',
    'echo x > ~/.npmrc',
    'echo x > pip.conf',
    'echo x > sitecustomize.py',
    'echo x > "$d/x.pth"',
    'echo x > ~/.curlrc',
    'echo x > ~/.wgetrc',
    'echo x > .cargo/config.toml',
    'echo x > ~/.config/go/env',
    'echo x > /etc/ld.so.preload',
    'cp x ~/.local/bin/ls',
  ];
  it.each(routes)('refuses %s, saying why', (line) => {
    const decision = deny.checkCommand(line);
    expect(decision).toMatchObject({ allow: false, message: expect.stringContaining('cannot be checked') });
  });
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
