import { ShearsError } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, ShellParseError } from './shell-parse.js';

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

  it('checks the file a copying program writes, not the ones it reads', () => {
    expect(reasons('cp config backup.cfg && mv old/config old.cfg')).toEqual([]);
    expect(reasons('cp x bare/config')).toEqual([expect.stringMatching(/file named config/)]);
    expect(reasons('cp -t repo/hooks pre-commit')).toEqual([expect.stringMatching(/git hook/)]);
    expect(reasons('cp hooks-src/pre-push repo/hooks/')).toEqual([expect.stringMatching(/git hook/)]);
    expect(reasons('cp -rt repo/.git/hooks pre-commit')).toEqual(
      expect.arrayContaining([expect.stringMatching(/path into \.git/), expect.stringMatching(/git hook/)]),
    );
    expect(reasons('install -m 755 zap /usr/local/bin/ls')).toEqual([
      expect.stringMatching(/directory on PATH/),
    ]);
    expect(reasons('cp best.pth final.pth')).toEqual([]);
    expect(reasons('cp x.pth "$site/x.pth"')).toEqual([expect.stringMatching(/\.pth file/)]);
    expect(reasons('echo "import os" > x.pth')).toEqual([expect.stringMatching(/\.pth file/)]);
  });
});
