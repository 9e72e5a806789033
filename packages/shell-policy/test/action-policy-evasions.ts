// Command lines that run `rm` (or `curl`) without naming it where a simple parser looks: each must
// be refused by a policy with `deny: ['rm', 'curl']` and by an allow list that omits them. Those
// with `proof` are also run in a real bash (test/run-in-bash.ts) to show that they do remove
// ./victim: the test is about what bash runs, not about what a parser thinks.

export interface Evasion {
  /** The class of evasion, for the test name. */
  name: string;
  line: string;
  /** Run it in bash and expect ./victim gone (default true). */
  proof?: boolean;
  /**
   * A program the proof needs that not every test machine has (scripts/provision-test.sh does not
   * install it): the proof runs where it is installed.
   */
  needs?: string;
}

const GIT_REPO = 'git init -q r && cd r && ';
const GIT_COMMITTED =
  'git init -q r && cd r && echo a > f && git add f && git -c user.name=a -c user.email=b commit -qm m && echo b > f && ';

export const EVASIONS: readonly Evasion[] = [
  // Words bash rewrites before running them.
  { name: 'brace expansion as the command', line: '{rm,victim}' },
  { name: 'brace expansion inside the name', line: 'r{m,} victim; true' },
  { name: 'brace expansion through a path', line: '{/bin/rm,victim}' },
  { name: 'a $"..." translatable string', line: '$"rm" victim' },
  { name: 'an ANSI-C \\u escape', line: "$'\\u0072m' victim" },
  { name: 'an ANSI-C \\x escape', line: "$'r\\x6d' victim" },
  { name: 'an extglob pattern as the command', line: 'shopt -s extglob\n/bin/r@(m) victim' },
  { name: 'time -p before the command', line: 'time -p rm victim' },
  { name: 'time -- before the command', line: 'time -- rm victim' },
  // Expansions that run commands.
  { name: 'command substitution inside arithmetic', line: 'echo $(( $(rm victim) 0 ))' },
  { name: 'arithmetic on a variable holding a subscript', line: "x='a[$(rm victim)]'; echo $((x))" },
  { name: '$[ ] arithmetic on a variable', line: "x='a[$(rm victim)]'; echo $[x]" },
  { name: '(( )) on a variable', line: "x='a[$(rm victim)]'; ((x)); true" },
  { name: 'for (( )) on a variable', line: "x='a[$(rm victim)]'; for ((i=0; i<x; i++)); do :; done" },
  { name: 'let on a variable', line: "let 'y=a[$(rm victim)]'" },
  { name: '[[ -eq ]] on a variable', line: "x='a[$(rm victim)]'; [[ $x -eq 0 ]]; true" },
  { name: 'the prompt expansion ${p@P}', line: "p='$(rm victim)'; echo ${p@P}" },
  { name: 'an indirect expansion ${!x}', line: "x='a[$(rm victim)]'; : ${!x}" },
  { name: 'an array subscript on a variable', line: 'x=\'b[$(rm victim)]\'; a=(1); echo "${a[x]}"' },
  { name: 'a substring offset on a variable', line: "x='a[$(rm victim)]'; s=abc; echo ${s:x}" },
  { name: 'a compound assignment given to declare', line: "declare -a 'a=([$(rm victim)]=1)'" },
  { name: 'declare with a subscripted name', line: "declare 'a[$(rm victim)]=1'" },
  { name: 'declare -i then an assignment', line: "declare -i n; x='a[$(rm victim)]'; n=x" },
  { name: 'declare -n name reference', line: "declare -n r='a[$(rm victim)]'; echo $r" },
  { name: 'read into a subscript', line: "read 'a[$(rm victim)]' <<< 1" },
  { name: 'printf -v into a subscript', line: "printf -v 'a[$(rm victim)]' %s 1" },
  { name: 'unset of a name held in a variable', line: 'x=\'a[$(rm victim)]\'; a=(1 2); unset "$x"' },
  { name: 'read into a name held in a variable', line: 'x=\'a[$(rm victim)]\'; a=(1); read "$x" <<< y' },
  { name: 'test -v on a subscript', line: "test -v 'a[$(rm victim)]'; true" },
  { name: 'compgen -W expands its word list', line: "compgen -W '$(rm victim)' x" },
  { name: 'compgen -C runs a command', line: "compgen -C 'rm victim' x" },
  { name: 'an unquoted here-document body', line: 'cat <<EOF\n$(rm victim)\nEOF' },
  { name: 'an unquoted here-document body with tabs', line: 'cat <<-EOF\n\t`rm victim`\n\tEOF' },
  { name: 'a here-document delimiter written \\EOF', line: 'cat <<\\EOF\nx\nEOF\nrm victim' },
  { name: 'a comment inside $( ) inside double quotes', line: 'echo "$( # )\nrm victim\n)"' },
  {
    name: 'a here-document inside $( ) inside double quotes',
    line: 'echo "$(cat <<EOF\n)\nEOF\nrm victim\n)"',
  },
  { name: 'a comment inside $( ) inside ${ }', line: 'echo ${y:-$( # }\nrm victim\n)}' },
  { name: 'a case pattern inside $( )', line: 'echo "$(case x in x) rm victim;; esac)"' },
  // Builtins that run strings or change what later names mean.
  { name: 'a function defined with the function keyword', line: 'function d { rm victim; }; d' },
  { name: 'a coprocess with a name', line: 'coproc d { rm victim; }; sleep 0.5' },
  { name: 'a trap', line: "trap 'rm victim' ERR; false" },
  { name: 'PS4 with set -x', line: "PS4='$(rm victim)'; set -x; true" },
  { name: 'mapfile -C callback', line: "mapfile -C 'rm victim; :' -c 1 <<< x" },
  { name: 'hash -p', line: 'hash -p /bin/rm ls; ls victim' },
  { name: 'source <(...)', line: 'source <(echo rm victim)' },
  { name: '. of a written file', line: "echo 'rm victim' > s.sh && . ./s.sh" },
  { name: 'an alias defined and used', line: 'shopt -s expand_aliases\nalias d=rm\nd victim' },
  { name: 'an alias through BASH_ALIASES', line: 'shopt -s expand_aliases\nBASH_ALIASES[d]=rm\nd victim' },
  { name: 'the command hash table BASH_CMDS', line: 'BASH_CMDS[ls]=/bin/rm; ls victim' },
  // Shells and interpreters reading their program from standard input.
  { name: 'a shell reading a pipe', line: 'echo cm0gdmljdGlt | base64 -d | sh' },
  { name: 'a shell reading a here-string', line: "bash <<< 'rm victim'" },
  { name: 'a shell reading a here-document through cat', line: 'cat <<EOF | sh\nrm victim\nEOF' },
  { name: 'a shell reading a here-string that expands', line: 'bash <<< "$(echo rm victim)"' },
  { name: 'bash -s', line: "bash -s <<< 'rm victim'" },
  { name: 'bash /dev/stdin', line: "bash /dev/stdin <<< 'rm victim'" },
  { name: 'bash <(...)', line: 'bash <(echo rm victim)' },
  { name: 'bash reading a duplicated descriptor', line: "exec 3<<<'rm victim'; bash <&3" },
  { name: 'bash -c with an option after -c', line: "bash -c -e 'rm victim'" },
  { name: 'bash -ceo pipefail', line: "bash -ceo pipefail 'rm victim'" },
  { name: 'python reading a here-document', line: "python3 <<'EOF'\nimport os; os.remove('victim')\nEOF" },
  { name: 'python -', line: 'python3 - <<< \'import os; os.remove("victim")\'' },
  { name: 'perl reading a pipe', line: 'echo \'unlink "victim"\' | perl' },
  {
    name: 'node reading a file on stdin',
    line: 'echo \'require("fs").unlinkSync("victim")\' > x.js; node < x.js',
  },
  {
    name: 'python -c with program text computed at run time',
    line: 'python3 -c "$(echo \'import os; os.remove("victim")\')"',
  },
  { name: 'zsh -c (not bash syntax)', line: "zsh -c 'rm victim'", proof: false },
  // A shell or interpreter whose script is the input a wrapper passes on.
  { name: 'xargs -I{} sh -c {}', line: "echo 'rm victim' | xargs -I{} sh -c {}" },
  { name: 'xargs -I% bash -c with % as a command', line: "echo 'rm victim' | xargs -I% bash -c 'cd . && %'" },
  { name: 'xargs sh -c (the script appended)', line: 'echo "\'rm victim\'" | xargs sh -c' },
  { name: 'xargs bash -ec (the script appended)', line: 'echo "\'rm victim\'" | xargs bash -ec' },
  {
    name: 'xargs -I{} python3 -c {}',
    line: "echo 'import os; os.remove(\"victim\")' | xargs -d '\\n' -I{} python3 -c {}",
  },
  { name: 'find -exec sh -c {}', line: "find . -name victim -exec sh -c '{}' \\;", proof: false },
  // Wrappers and their options.
  { name: 'xargs --max-chars N (long option with a value)', line: 'echo victim | xargs --max-chars 100 rm' },
  { name: 'xargs --max-c (abbreviated)', line: 'echo victim | xargs --max-c 100 rm' },
  { name: 'stdbuf --output MODE', line: 'stdbuf --output L rm victim' },
  { name: 'env --split-string', line: "env --split-string='rm victim'" },
  { name: 'env -iS in a cluster', line: "env -iS 'rm victim'" },
  { name: 'env -vS attached', line: "env -vS'rm victim'" },
  { name: 'env --ch (an abbreviated long option)', line: 'env --ch . rm victim' },
  { name: 'env with an exported function', line: "env 'BASH_FUNC_ls%%=() { rm victim; }' bash -c ls" },
  { name: 'nice --adj (abbreviated)', line: 'nice --adj 5 rm victim' },
  { name: 'timeout --k (abbreviated)', line: 'timeout --k 1 5 rm victim' },
  {
    name: 'find -exec {} as the command',
    line: 'find /usr/bin /bin -maxdepth 1 -name rm -exec {} ./victim \\; -quit',
  },
  { name: 'flock -c', line: "flock lk -c 'rm victim'" },
  { name: 'script -c', line: "script -qc 'rm victim' /dev/null" },
  { name: 'su -c', line: "su -c 'rm victim'" },
  { name: 'watch with a command string', line: "watch -n 1 'rm victim'", proof: false },
  { name: 'busybox applet', line: 'busybox rm victim' },
  { name: 'sudo -s', line: 'sudo -s rm victim', proof: false },
  { name: 'parallel', line: "parallel 'rm {}' ::: victim", proof: false },
  { name: 'cmake -E', line: 'cmake -E rm victim', proof: false },
  { name: 'coreutils multi-call', line: 'coreutils --coreutils-prog=rm victim', proof: false },
  // Programs that run a command string.
  { name: "sed's e command", line: "sed -n '1e rm victim' /etc/hostname" },
  { name: "sed's s///e flag", line: "echo x | sed 's/x/rm victim/e'" },
  { name: 'sed --expression with e', line: "sed --expression='1e rm victim' -n /etc/hostname" },
  { name: 'awk system()', line: 'awk \'BEGIN { system("rm victim") }\'' },
  { name: 'awk print to a pipe', line: 'echo x | awk \'{ print | "rm victim" }\'' },
  { name: 'awk getline from a command', line: 'awk \'BEGIN { "rm victim" | getline }\'' },
  { name: 'rg --pre', line: 'rg --pre rm anything victim; true' },
  { name: 'rg --pre=', line: 'rg --pre=rm anything victim; true' },
  { name: 'tar --to-command', line: "tar cf t.tar victim && tar xf t.tar --to-command='rm victim'" },
  { name: 'tar -I', line: "tar -cf t.tar -I 'rm victim' victim; true" },
  { name: 'tar --use-comp (abbreviated)', line: "tar -cf t.tar --use-comp='rm victim' victim; true" },
  { name: 'ssh -o ProxyCommand', line: "ssh -o ProxyCommand='rm victim' -o BatchMode=yes host true; true" },
  {
    name: 'ssh -oProxyCommand= attached',
    line: "ssh -oProxyCommand='rm victim' -o BatchMode=yes host true; true",
  },
  {
    name: 'ssh -F with a written config',
    line: "printf 'Host *\\n ProxyCommand rm victim\\n' > cfg; ssh -F cfg -o BatchMode=yes x true; true",
  },
  {
    name: 'a remote shell fed by a pipe continued on the next line',
    line: "echo 'rm victim' |\nssh -o BatchMode=yes host",
    proof: false,
  },
  { name: 'scp -o ProxyCommand', line: "scp -o ProxyCommand='rm victim' -o BatchMode=yes host:a b; true" },
  { name: 'make --eval', line: "make --eval=$'x:\\n\\trm victim' x" },
  { name: 'zip -TT', line: "zip -q z.zip victim -T -TT 'rm victim'", proof: false },
  { name: 'sqlite3 .shell', line: "sqlite3 :memory: '.shell rm victim'", proof: false },
  { name: 'ed ! command', line: "printf '!rm victim\\nq\\n' | ed", proof: false },
  { name: 'vim -c', line: "vim -es -c '!rm victim' -c q", proof: false },
  { name: 'npx -c', line: "npx -c 'rm victim'", proof: false },
  // git runs commands named in its configuration.
  { name: 'git -c alias with !', line: `${GIT_REPO}git -c alias.d='!rm ../victim' d` },
  { name: 'git config alias then use', line: `${GIT_REPO}git config alias.d '!rm ../victim' && git d` },
  {
    name: 'git -c core.pager with -p',
    line: `${GIT_REPO}git -c user.name=a -c user.email=b commit -q --allow-empty -m m && git -c core.pager='rm ../victim' -p log`,
    // git starts a pager only when standard output is a terminal, which a sandbox command lacks.
    proof: false,
  },
  { name: 'git -c core.fsmonitor', line: `${GIT_REPO}git -c core.fsmonitor='rm ../victim' status` },
  { name: 'GIT_EXTERNAL_DIFF', line: `${GIT_COMMITTED}GIT_EXTERNAL_DIFF='rm ../victim;:' git diff` },
  {
    name: 'GIT_CONFIG_COUNT/KEY/VALUE',
    line: `${GIT_REPO}GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.d GIT_CONFIG_VALUE_0='!rm ../victim' git d`,
  },
  {
    name: 'GIT_CONFIG_* exported',
    line: `export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.d GIT_CONFIG_VALUE_0='!rm ../victim'; ${GIT_REPO}git d`,
  },
  {
    name: 'a written .git/config',
    line: `${GIT_REPO}printf '[alias]\\n\\td = !rm ../victim\\n' >> .git/config && git d`,
  },
  {
    name: '.git/config written through cd .git',
    line: `${GIT_REPO}cd .git && printf '[alias]\\n\\td = !rm ../victim\\n' >> config && cd .. && git d`,
  },
  {
    name: 'a hand-made bare repository config',
    line: "git init -q --bare b && printf '[alias]\\n\\td = !rm ../victim\\n' >> b/config && cd b && git d",
  },
  { name: 'git grep -O', line: `${GIT_REPO}echo hi > f && git add f && git grep -O'rm ../victim' hi` },
  {
    name: 'git ls-remote --upload-pack',
    line: `${GIT_REPO}git ls-remote --upload-pack='rm ../victim;:' .; true`,
  },
  { name: 'git clone -u', line: "git init -q r && git clone -q -u 'rm victim;:' r r2; true" },
  {
    name: 'HOME pointing at a written .gitconfig',
    line: "mkdir h && printf '[alias]\\n\\td = !rm ../victim\\n' > h/.gitconfig && git init -q r && cd r && HOME=$PWD/../h git d",
  },
  { name: 'git rebase --exec', line: "git rebase --exec 'rm victim' HEAD~1", proof: false },
  { name: 'git submodule foreach', line: "git submodule foreach 'rm victim'", proof: false },
  // Variables that change what later programs do.
  {
    name: 'a bare PATH assignment',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/ls && PATH=$PWD/bin:$PATH; ls victim',
  },
  {
    name: 'PATH for one command',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/ls && PATH=$PWD/bin:$PATH ls victim',
  },
  { name: 'BASH_ENV', line: "echo 'rm victim' > be; BASH_ENV=./be bash -c true" },
  {
    name: 'export PATH',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && export PATH=$PWD/bin:$PATH && cat victim',
  },
  {
    name: 'declare -x PATH',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && declare -x PATH=$PWD/bin:$PATH && cat victim',
  },
  {
    name: 'read PATH',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && read PATH <<< "$PWD/bin:$PATH" && cat victim',
  },
  {
    name: 'printf -v PATH',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && printf -v PATH %s "$PWD/bin:$PATH" && cat victim',
  },
  {
    name: 'mapfile PATH',
    // bash does look commands up in the new PATH (`type cat` finds bin/cat), but an array PATH is
    // not exported, so running it fails here: no proof.
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && mapfile -t PATH <<< "$PWD/bin:$PATH" && hash -r && cat victim',
    proof: false,
  },
  {
    name: 'for PATH in',
    line: 'mkdir bin && ln -s "$(command -v rm)" bin/cat && for PATH in "$PWD/bin"; do cat victim; done',
  },
  { name: 'PATH assigned alone', line: 'PATH=/tmp/bin:$PATH', proof: false },
  { name: 'LD_PRELOAD', line: 'LD_PRELOAD=./evil.so ls', proof: false },
  { name: 'HOME assigned alone', line: 'HOME=/tmp/elsewhere', proof: false },
  { name: 'export PYTHONPATH', line: 'export PYTHONPATH=/tmp/evil', proof: false },
  { name: 'RIPGREP_CONFIG_PATH', line: 'export RIPGREP_CONFIG_PATH=/tmp/rg.conf', proof: false },
  { name: 'NODE_OPTIONS', line: "NODE_OPTIONS='--require ./evil.js' npm test", proof: false },
  // A copy of the program under another name.
  { name: 'a copy of rm', line: 'cp /bin/rm zap && ./zap victim' },
  { name: 'a link to rm', line: 'ln -s /usr/bin/rm zap && ./zap victim' },
  { name: 'a copy of rm through a redirection', line: 'cat < /bin/rm > zap && chmod +x zap && ./zap victim' },
  { name: 'a copy through a glob', line: 'cp /bin/r[m] zap && ./zap victim' },
  {
    name: 'a copy through brace expansion',
    line: 'cp /bin/{rm,} zap 2>/dev/null; ./zap victim',
    proof: false,
  },
  { name: 'the dynamic loader running rm', line: '/lib64/ld-linux-x86-64.so.2 /bin/rm victim' },
  { name: 'the shell through /proc/self/exe', line: "/proc/self/exe -c 'rm victim'" },
  {
    name: 'a program written into a PATH directory',
    line: 'printf \'#!/bin/sh\\nexec rm "$@"\\n\' > /usr/local/bin/zap && chmod +x /usr/local/bin/zap && zap victim; rm -f /usr/local/bin/zap',
    proof: false,
  },
  {
    name: 'ssh config written under ~/.ssh',
    line: "mkdir -p ~/.ssh && printf 'Host x\n ProxyCommand rm victim\n' >> ~/.ssh/config",
    proof: false,
  },
  {
    name: 'a shell startup file then a login shell',
    line: "echo 'rm victim' >> ~/.bash_profile && bash -lc true",
    proof: false,
  },
  { name: '/etc/ld.so.preload', line: 'echo /tmp/evil.so >> /etc/ld.so.preload', proof: false },
  {
    name: 'sort --compress-program',
    line: 'seq 1 2000000 | sort -S 1M --compress-program=rm -T . >/dev/null 2>&1; true',
    proof: false,
  },
  { name: 'split --filter', line: "echo x | split --filter='rm victim'" },
  { name: 'diff3 --diff-program', line: 'diff3 --diff-program=rm victim victim victim; true', proof: false },
  { name: 'git config -f with an alias', line: "git config -f r.cfg alias.d '!rm victim'", proof: false },
  { name: 'make -f reading standard input', line: "printf 'x:\n\trm victim\n' | make -f - x" },
  {
    name: 'tee into a hand-made repository config',
    line: "mkdir -p b/objects b/refs && echo 'ref: refs/heads/main' > b/HEAD && printf '[alias]\n\td = !rm ../victim\n' | tee b/config >/dev/null && cd b && git d",
  },
  { name: 'faketime --date-prog', line: "faketime --date-prog rm '2020-01-01' true", proof: false },
  { name: 'dbus-run-session --dbus-daemon', line: 'dbus-run-session --dbus-daemon=rm -- true', proof: false },
  // curl, the other denied program.
  { name: 'curl through brace expansion', line: '{curl,-V}', proof: false },
  { name: 'curl through xargs --max-procs', line: 'echo -V | xargs --max-p 1 curl', proof: false },
  { name: 'curl through rg --pre', line: 'rg --pre curl x .', proof: false },
];

const USER_SITE = `"$(python3 -c 'import site; print(site.getusersitepackages())')"`;

/**
 * Issue 36 §4: wrappers, options that run another program or a start-up file, and configuration
 * written for a later command, each class modelled from the programs' own manuals and `--help`
 * (src/wrapper-table.ts and the program modules). Every one ran under `deny: ['rm', 'curl']`
 * before.
 */
export const WRAPPER_ROUTES: readonly Evasion[] = [
  // Wrappers whose arguments are a command.
  { name: 'setpriv', line: 'setpriv rm victim' },
  { name: 'setpriv with its options', line: 'setpriv --reuid=0 --regid=0 --init-groups rm victim' },
  { name: 'setarch with an architecture', line: 'setarch x86_64 -R rm victim' },
  { name: 'setarch with a computed architecture', line: 'setarch "$(uname -m)" rm victim' },
  { name: 'setarch installed as linux64', line: 'linux64 rm victim' },
  { name: 'choom -n', line: 'choom -n 0 -- rm victim' },
  { name: 'capsh -- (bash with its arguments)', line: "capsh -- -c 'rm victim'", needs: 'capsh' },
  { name: 'capsh == (capsh again)', line: "capsh == -- -c 'rm victim'", needs: 'capsh' },
  { name: 'tini', line: 'tini -s -- rm victim' },
  { name: 'ssh-agent running a command', line: 'ssh-agent rm victim' },
  {
    name: 'run-parts running a directory of programs',
    line: `mkdir d && printf '#!/bin/sh\\nexec "$(printf r)m" "$@"\\n' > d/x && chmod +x d/x && run-parts -a victim d`,
  },
  {
    name: 'nsenter --target PID (a long option with a value)',
    line: 'nsenter --target 1 --mount rm victim',
    proof: false,
  },
  { name: 'numactl -a (a flag, not a value)', line: 'numactl -a rm victim', proof: false },
  { name: 'dumb-init', line: 'dumb-init rm victim', proof: false },
  { name: 'gosu', line: 'gosu root rm victim', proof: false },
  { name: 'chronic (moreutils)', line: 'chronic rm victim', proof: false },
  { name: 'eatmydata', line: 'eatmydata rm victim', proof: false },
  { name: 'sshpass', line: 'sshpass -p x rm victim', proof: false },
  { name: 'bwrap with two-word options', line: 'bwrap --bind / / --dev /dev rm victim', proof: false },
  { name: 'rlwrap -z (a filter program)', line: 'rlwrap -z rm cat', proof: false },
  {
    name: 'sudo -e (an editor reading its input)',
    line: "printf ':!rm victim\\n' | sudo -e x",
    proof: false,
  },
  { name: 'poetry -C DIR run', line: 'poetry -C . run rm victim', proof: false },
  { name: 'bundle exec', line: 'bundle exec rm victim', proof: false },
  { name: 'rustup run', line: 'rustup run stable rm victim', proof: false },
  { name: 'cross-env', line: 'cross-env NODE_ENV=test rm victim', proof: false },
  { name: 'nix-shell --run', line: "nix-shell -p hello --run 'rm victim'", proof: false },
  { name: 'torify', line: 'torify rm victim', proof: false },
  { name: 'devbox run', line: 'devbox run rm victim', proof: false },
  { name: 'run0 (systemd)', line: 'run0 rm victim', proof: false },
  // Options that run another program.
  { name: 'strace -o |command', line: "strace -o '|rm victim' true", needs: 'strace' },
  { name: 'strace --output=!command', line: "strace --output='!rm victim' true", needs: 'strace' },
  {
    name: 'strace -o in a cluster of options',
    line: "strace -qqq -e trace=none -o '|rm victim' true",
    needs: 'strace',
  },
  { name: 'strace -E LD_PRELOAD', line: 'strace -E LD_PRELOAD=./evil.so true', proof: false },
  {
    name: 'sort --co (an abbreviation getopt accepts)',
    line: 'seq 1 2000000 | sort -S 1M --co=rm -T . >/dev/null 2>&1; true',
    proof: false,
  },
  { name: 'split --f (abbreviated --filter)', line: "echo x | split --f='rm victim'" },
  { name: 'make -E in a cluster', line: "make -sE $'x:\\n\\trm victim' x" },
  { name: 'make --ev (abbreviated --eval)', line: "make --ev=$'x:\\n\\trm victim' x" },
  { name: 'man --pag (abbreviated --pager)', line: "man --pag='rm victim' ls", proof: false },
  { name: 'man -C (a configuration that defines the pager)', line: 'man -C my.conf ls', proof: false },
  {
    name: 'wget -e (a .wgetrc command)',
    line: 'wget -q -e use_askpass=rm http://127.0.0.1:9/',
    proof: false,
  },
  {
    name: 'git rebase --ex (abbreviated --exec)',
    line: `${GIT_REPO}git -c user.name=a -c user.email=b commit -q --allow-empty -m m && git -c user.name=a -c user.email=b commit -q --allow-empty -m n && git rebase --ex='rm ../victim' HEAD~1`,
  },
  {
    name: 'git rebase -x in a cluster',
    line: `${GIT_REPO}git -c user.name=a -c user.email=b commit -q --allow-empty -m m && git -c user.name=a -c user.email=b commit -q --allow-empty -m n && git rebase -qx 'rm ../victim' HEAD~1`,
  },
  {
    name: 'git clone --upload-p (abbreviated)',
    line: "git init -q r && git clone -q --upload-p='rm victim;:' r r2; true",
  },
  {
    name: 'git ls-remote --upl (abbreviated)',
    line: `${GIT_REPO}git ls-remote --upl='rm ../victim;:' .; true`,
  },
  {
    name: 'git grep --open-files (abbreviated)',
    line: `${GIT_REPO}echo hi > f && git add f && git grep --open-files='rm ../victim' hi`,
  },
  {
    name: 'git commit starting vi on a pipe',
    line: `${GIT_REPO}printf ':!rm ../victim\\n:q!\\n' | TERM=xterm git -c user.name=a -c user.email=b commit --allow-empty`,
    needs: 'vi',
  },
  {
    name: 'git add -p answering e from a here-string',
    line: `${GIT_REPO}echo a > f && git add f && echo b > f && git add -p <<< e`,
    proof: false,
  },
  {
    name: 'sqlite3 -cmd before the database',
    line: "sqlite3 -cmd '.shell rm victim' :memory: 'select 1'",
    needs: 'sqlite3',
  },
  {
    name: 'gcc -wrapper',
    line: "echo 'int x;' > x.c && gcc -wrapper 'sh,-c,rm victim' -c x.c; true",
    needs: 'gcc',
  },
  { name: 'dpkg --pre-invoke', line: "dpkg --pre-invoke='rm victim' --configure -a" },
  {
    name: 'apt-get -o with a hook',
    line: "apt-get -o APT::Update::Pre-Invoke::='rm victim' update",
    proof: false,
  },
  { name: 'netcat -e', line: 'nc -l -p 9 -e /bin/sh', proof: false },
  { name: 'socat EXEC:', line: "socat - EXEC:'rm victim'", proof: false },
  { name: 'go env -w GOFLAGS', line: 'go env -w GOFLAGS=-toolexec=./zap', proof: false },
  {
    name: 'aria2c --on-download-complete',
    line: 'aria2c --on-download-complete=./zap http://127.0.0.1:9/x',
    proof: false,
  },
  { name: 'yt-dlp --exec', line: "yt-dlp --exec 'rm victim' http://127.0.0.1:9/x", proof: false },
  { name: 'rustc -C linker', line: 'rustc -C linker=./zap main.rs', proof: false },
  { name: 'hg --config with a hook', line: "hg --config hooks.pre-status='rm victim' status", proof: false },
  { name: 'mysql --pager', line: "mysql --pager='rm victim' -e 'select 1'", proof: false },
  { name: 'PSQLRC for psql', line: 'PSQLRC=./rc psql -c "select 1"', proof: false },
  // Interpreter code that runs programs, like awk's system().
  { name: 'python3 -c with os.system', line: 'python3 -c \'import os; os.system("rm victim")\'' },
  {
    name: 'python3 -c with subprocess',
    line: 'python3 -c \'import subprocess; subprocess.run(["rm", "victim"])\'',
  },
  { name: 'python3 -c with __import__', line: 'python3 -c \'__import__("os").system("rm victim")\'' },
  { name: 'python3 -c with exec', line: 'python3 -c \'exec("import os; os.remove(\\"victim\\")")\'' },
  { name: 'perl -e with system', line: 'perl -e \'system("rm victim")\'' },
  { name: 'perl -e with backticks', line: "perl -e '`rm victim`'" },
  { name: 'perl -e with qx', line: "perl -e 'qx(rm victim)'" },
  {
    name: 'perl -MIPC::Open3',
    line: 'perl -MIPC::Open3 -e \'open3(undef, undef, undef, "rm", "victim"); wait\'',
  },
  { name: 'node -e with child_process', line: 'node -e \'require("child_process").execSync("rm victim")\'' },
  { name: 'ruby -e with system', line: 'ruby -e \'system("rm victim")\'', proof: false },
  { name: 'php -r with system', line: 'php -r \'system("rm victim");\'', proof: false },
  // Start-up files named by an option.
  { name: 'bash --rcfile with -ic', line: "printf 'rm victim\\n' > rc; bash --rcfile rc -ic true" },
  { name: 'bash --init-file with -i -c', line: "printf 'rm victim\\n' > rc; bash --init-file rc -i -c true" },
  {
    name: 'less --lesskey-src setting LESSOPEN',
    line: "echo x > f; printf '#env\\nLESSOPEN=|rm victim %%s\\n' > k; less --lesskey-src=k f | cat",
    needs: 'less',
  },
  {
    name: 'sqlite3 -init',
    line: "printf '.shell rm victim\\n' > rc; sqlite3 -init rc :memory: 'select 1'",
    needs: 'sqlite3',
  },
  // Configuration a later command reads, written by the shell.
  {
    name: 'a usercustomize.py Python runs at start-up',
    line: `d=${USER_SITE}; mkdir -p "$d"; echo 'import os; os.remove("victim")' > "$d/usercustomize.py"; python3 -c 1`,
  },
  {
    name: 'a .pth file in the user site folder',
    line: `d=${USER_SITE}; mkdir -p "$d"; echo 'import os; os.remove("victim")' > "$d/x.pth"; python3 -c 1`,
  },
  {
    name: 'an .npmrc with node-options',
    line: 'echo \'require("fs").unlinkSync("victim")\' > x.js; printf \'node-options=--require=./x.js\\n\' > .npmrc; echo \'{"scripts":{"t":"node -e 1"}}\' > package.json; npm run -s t',
  },
  { name: 'a .yarnrc.yml', line: "echo 'yarnPath: ./zap.js' > .yarnrc.yml", proof: false },
  {
    name: 'a pip.conf',
    line: 'mkdir -p ~/.config/pip && echo [global] > ~/.config/pip/pip.conf',
    proof: false,
  },
  { name: 'a .curlrc', line: "echo 'output = zap' > ~/.curlrc", proof: false },
  { name: 'a .wgetrc', line: "echo 'use_askpass = ./zap' > ~/.wgetrc", proof: false },
  { name: 'an .ssh/rc', line: "mkdir -p ~/.ssh && echo 'rm ~/victim' > ~/.ssh/rc", proof: false },
  { name: 'a .bash_aliases', line: 'echo \'alias ls="rm victim"\' >> ~/.bash_aliases', proof: false },
  { name: 'a .sqliterc', line: "echo '.shell rm victim' > ~/.sqliterc", proof: false },
  { name: 'a husky hook', line: "mkdir -p .husky && echo 'rm victim' > .husky/pre-commit", proof: false },
  {
    name: 'a .githooks hook',
    line: "mkdir -p .githooks && echo 'rm victim' > .githooks/pre-push",
    proof: false,
  },
  {
    name: 'a .pre-commit-config.yaml',
    line: "printf 'repos: [{repo: local, hooks: [{id: x, name: x, entry: rm victim, language: system}]}]\\n' > .pre-commit-config.yaml",
    proof: false,
  },
  {
    name: 'a lefthook.yml',
    line: "echo 'pre-commit: {commands: {x: {run: rm victim}}}' > lefthook.yml",
    proof: false,
  },
  {
    name: 'a .cargo/config.toml',
    line: "mkdir -p .cargo && echo '[build]' > .cargo/config.toml",
    proof: false,
  },
];
