// What the shell parser treats as changing how later programs behave: environment variables that
// make programs load code, read other configuration or run other commands, and paths of files that
// configure git. These are lists, kept here in one place; the package README says what they cover
// and what a command parser cannot see (a file written under another name, a value computed at run
// time).
import type { ShellWord } from './types.js';

/** Variables refused in any assignment: they make the programs that read them run or load code. */
const SENSITIVE_NAMES = new Set([
  'PATH',
  'HOME',
  'CDPATH',
  'IFS',
  'ENV',
  'BASH_ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'POSIXLY_CORRECT',
  'PS0',
  'PS1',
  'PS2',
  'PS3',
  'PS4',
  'PROMPT_COMMAND',
  'GLOBIGNORE',
  'EXECIGNORE',
  'INPUTRC',
  'SHELL',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'MANPAGER',
  'MANOPT',
  'MANPATH',
  'BROWSER',
  'TAR_OPTIONS',
  'GZIP',
  'BZIP',
  'BZIP2',
  'XZ_OPT',
  'XZ_DEFAULTS',
  'ZIPOPT',
  'UNZIP',
  'UNZIPOPT',
  'GREP_OPTIONS',
  'RIPGREP_CONFIG_PATH',
  'WGETRC',
  'CURL_HOME',
  'MFLAGS',
  'GNUMAKEFLAGS',
  'NODE_OPTIONS',
  'NODE_REPL_EXTERNAL_MODULE',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'MAVEN_OPTS',
  'GRADLE_OPTS',
  'GEM_HOME',
  'GEM_PATH',
  'BUNDLE_GEMFILE',
  'PHPRC',
  'PHP_INI_SCAN_DIR',
  'TCLLIBPATH',
  'GCONV_PATH',
  'LOCPATH',
  'NLSPATH',
  'HOSTALIASES',
  'RES_OPTIONS',
  'LOCALDOMAIN',
  'GLIBC_TUNABLES',
  'TERMINFO',
  'TERMINFO_DIRS',
  'SUDO_ASKPASS',
  'SUDO_EDITOR',
  'KUBECONFIG',
  'VIRTUAL_ENV',
  'PIP_CONFIG_FILE',
  'RUSTC_WRAPPER',
  'RUSTC',
  'RUSTDOC',
  'GOFLAGS',
  'GOENV',
  'GOROOT',
  'GOTOOLCHAIN',
  'EMACSLOADPATH',
  'VIMINIT',
  'EXINIT',
  'MYVIMRC',
  'VIMRUNTIME',
  'GVIMINIT',
  'HGRCPATH',
  'COVERAGE_PROCESS_START',
  'COVERAGE_RCFILE',
  // Start-up files and pagers of database shells, interpreters and tools (their manuals'
  // ENVIRONMENT sections).
  'PSQLRC',
  'PSQL_PAGER',
  'PSQL_EDITOR',
  'MYSQL_HOME',
  'IRBRC',
  'VALGRIND_OPTS',
  'ZDOTDIR',
  'AWS_CONFIG_FILE',
]);

/** Prefixes of such variables (`LD_PRELOAD`, `GIT_CONFIG_COUNT`, `BASH_FUNC_ls%%`, ...). */
const SENSITIVE_PREFIXES = [
  'LD_',
  'DYLD_',
  'GIT_',
  'BASH_',
  'PYTHON',
  'PYTEST_',
  'PERL',
  'RUBY',
  'LUA_',
  'R_PROFILE',
  'R_ENVIRON',
  'R_LIBS',
  'NPM_CONFIG_',
  'YARN_',
  'COREPACK_',
  'CARGO_',
  'RUSTUP_',
  'OPENSSL_',
  'SSH_',
  'XDG_',
  'LESS',
  'MAKE',
  'MALLOC_',
  'SYSTEMD_',
  'DOCKER_',
];

/**
 * Harmless variables under a sensitive prefix: output and hashing switches of Python, who a git
 * commit is by.
 */
const HARMLESS_NAMES = new Set([
  'PYTHONUNBUFFERED',
  'PYTHONDONTWRITEBYTECODE',
  'PYTHONHASHSEED',
  'PYTHONIOENCODING',
  'PYTHONUTF8',
  'PYTHONFAULTHANDLER',
  'PYTHONDEVMODE',
  'PYTHONNOUSERSITE',
  'PYTHONOPTIMIZE',
  'PYTHONVERBOSE',
  'PYTHONWARNDEFAULTENCODING',
  'PYTHONTRACEMALLOC',
  'PYTHONPROFILEIMPORTTIME',
  'PYTHONMALLOC',
  'PYTHONCOERCECLOCALE',
  'PYTHONINTMAXSTRDIGITS',
  'PYTHONSAFEPATH',
  'PYTHONNODEBUGRANGES',
  'PYTHONASYNCIODEBUG',
  'PYTEST_DISABLE_PLUGIN_AUTOLOAD',
  'PYTEST_CURRENT_TEST',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
  'GIT_TERMINAL_PROMPT',
  'GIT_OPTIONAL_LOCKS',
]);

/**
 * Module search paths of interpreters: refused when they persist (bare assignments, `export`,
 * which outlive the command and steer later runs — a grader's test run among them), allowed as a
 * prefix of one command (`PYTHONPATH=src pytest`): the programs that read them run code of the
 * workspace anyway.
 */
const SEARCH_PATHS = new Set([
  'PYTHONPATH',
  'NODE_PATH',
  'PERL5LIB',
  'PERLLIB',
  'RUBYLIB',
  'CLASSPATH',
  'GOPATH',
  'PYTEST_ADDOPTS',
  'PYTEST_PLUGINS',
]);

/** Compilers a build runs: as a prefix of one command, the value is checked as a command. */
const COMMAND_VALUES = new Set(['CC', 'CXX', 'CPP', 'LD', 'AR', 'AS', 'FC']);

/**
 * What assigning `name` risks. `persistent`: a bare assignment, `export` or `declare` (the value
 * outlives the command); otherwise a prefix of one command. `refuse`: it changes how programs
 * behave; `command`: the value names a program to run (check it as a command line).
 */
export function variableRisk(name: string, persistent: boolean): 'refuse' | 'command' | undefined {
  if (name.includes('%')) return 'refuse'; // BASH_FUNC_name%%: an exported function
  const upper = name.toUpperCase();
  if (SEARCH_PATHS.has(upper)) return persistent ? 'refuse' : undefined;
  if (COMMAND_VALUES.has(upper)) return persistent ? 'refuse' : 'command';
  if (HARMLESS_NAMES.has(upper)) return undefined;
  if (SENSITIVE_NAMES.has(upper)) return 'refuse';
  return SENSITIVE_PREFIXES.some((prefix) => upper.startsWith(prefix)) ? 'refuse' : undefined;
}

/** Whether assigning `name` is refused outright (see `variableRisk`). */
export function isSensitiveVariable(name: string, persistent: boolean): boolean {
  return variableRisk(name, persistent) !== undefined;
}

/** POSIX special builtins: assignments before them outlive the command (in POSIX mode). */
const SPECIAL_BUILTINS = new Set([
  ':',
  '.',
  'source',
  'break',
  'continue',
  'eval',
  'exec',
  'exit',
  'export',
  'readonly',
  'return',
  'set',
  'shift',
  'times',
  'trap',
  'unset',
]);

export function isSpecialBuiltin(name: string): boolean {
  return SPECIAL_BUILTINS.has(name);
}

const GIT_HOOKS = new Set([
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'post-index-change',
]);

// `.git` as a path component or quoted inside a program's text (`open('.git/config')`),
// a user, system or XDG git config.
const GIT_PATH = /(?:^|[^\w.-])\.git(?:[/'"\s)]|$)|gitconfig\b|(?:^|[^\w.-])git\/config\b/;

/**
 * Files other programs read as configuration or run at start-up, by the programs that read them:
 * each can make a later command run another program or load code, so a word naming one counts as
 * running that program with it (a file written there is configuration the command line does not
 * show). From each program's manual: FILES and ENVIRONMENT sections.
 */
const CONFIGURATION_FILES: readonly (readonly [RegExp, string])[] = [
  [
    /(?:^|[^\w.-])\.ssh\/(?:config|rc|environment|authorized_keys2?)\b|ssh_config\b/,
    'ssh config: ProxyCommand, LocalCommand, a login rc',
  ],
  [/ld\.so\.(?:preload|conf)\b/, 'ld.so.preload: libraries loaded into every program'],
  [
    /(?:^|[/'"\s=:])\.(?:bashrc|bash_profile|bash_login|bash_logout|bash_aliases|profile|zshrc|zshenv|zprofile|zlogin|kshrc|mkshrc)\b|\/etc\/(?:profile|bash\.bashrc|bashrc|zsh\/|environment\b)|(?:^|[/'"\s=:])\.pam_environment\b/,
    'shell startup files',
  ],
  [
    /(?:^|[/'"\s=:])\.?npmrc\b|(?:^|[/'"\s=:])\.yarnrc(?:\.yml)?\b|\.pnpmfile\.c?js\b|(?:^|[/'"\s=:])bunfig\.toml\b/,
    'npm, yarn, pnpm or bun configuration: script-shell, node-options, yarnPath, hooks',
  ],
  [
    /(?:^|[/'"\s=:])pip\.(?:conf|ini)\b|\.pydistutils\.cfg\b|(?:sitecustomize|usercustomize)\.py\b|(?:site|dist)-packages\/[^/\s'"]*\.pth\b/,
    'Python start-up modules, .pth files, pip configuration',
  ],
  [
    /(?:^|[/'"\s=:])[._]?curlrc\b|(?:^|[/'"\s=:])\.?wgetrc\b/,
    'curl or wget configuration: output files, use_askpass',
  ],
  [
    /(?:^|[/'"\s=:])\.(?:valgrindrc|gdbinit|lldbinit|Rprofile|Renviron|irbrc|pryrc|perldb|psqlrc|sqliterc|my\.cnf|mylogin\.cnf|vimrc|gvimrc|exrc|nvimrc|lesskey|lessfilter|hgrc|emacs)\b|nvim\/init\.(?:vim|lua)\b|\.hg\/hgrc\b|\.config\/lesskey\b|syslesskey\b/,
    'start-up files of debuggers, interpreters, database shells, editors, pagers, hg',
  ],
  [
    /\.cargo\/config(?:\.toml)?\b|(?:^|[/'"\s=:])go\/env\b/,
    'cargo or go configuration: runners, wrappers, flags',
  ],
  [
    /(?:^|[/'"\s=:])(?:\.pre-commit-config\.ya?ml|\.?lefthook(?:-local)?\.ya?ml|\.overcommit\.yml)\b/,
    'git hook frameworks: the commands pre-commit, lefthook or overcommit run at each commit',
  ],
];

const ANY_CONFIGURATION_FILE = new RegExp(CONFIGURATION_FILES.map(([pattern]) => pattern.source).join('|'));

/** A reason to refuse a word that names git's configuration or another program's, if it does. */
export function configPathHazard(text: string): string | undefined {
  if (text.includes('git') && GIT_PATH.test(text)) {
    return 'a path into .git or a git configuration file (git runs commands named there: aliases, hooks, pagers, filters)';
  }
  // Every file below has a dot or a slash in the words that name it; one pass finds whether any
  // is named, the list then says which.
  if ((!text.includes('.') && !text.includes('/')) || !ANY_CONFIGURATION_FILE.test(text)) return undefined;
  for (const [pattern, readers] of CONFIGURATION_FILES) {
    if (pattern.test(text)) {
      return `a path to a file other programs run commands from (${readers})`;
    }
  }
  return undefined;
}

/** Glob characters a redirection target may hold, turned into a regular expression. */
function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let index = 0; index < glob.length; index += 1) {
    const char = glob[index]!;
    if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else if (char === '[') {
      const close = glob.indexOf(']', index + 2);
      if (close < 0) source += '\\[';
      else {
        source += `[${glob
          .slice(index + 1, close)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        index = close;
      }
    } else source += char.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`(?:^|/)${source}$`);
}

/** Directories git runs hooks from: its own, and the ones projects point core.hooksPath at. */
const HOOK_DIRECTORIES = new Set(['hooks', '.husky', '.githooks', 'githooks', '.git-hooks', 'git-hooks']);

const SENSITIVE_FILES = [
  '.git/config',
  '.git/hooks/pre-commit',
  '.gitconfig',
  '.config/git/config',
  'config',
];

/**
 * Directories on the default PATH, and the ones package runners put first on it
 * (`node_modules/.bin` for npx and npm scripts, a virtualenv's `bin` for `uv run`): a program
 * written there shadows the one a later command names.
 */
const PATH_DIRECTORIES =
  /^(?:\/usr\/local\/s?bin|\/usr\/s?bin|\/s?bin|(?:~|\$HOME|\$\{HOME\}|\/root|\/home\/[^/]+)\/(?:\.local\/)?bin)\/|(?:^|\/)(?:node_modules\/\.bin|\.?venv\/bin)\//;

/**
 * A reason to refuse a file a command writes: a file named `config` (the configuration of a git
 * repository made by hand, where `.git` is not in the path), a git hook, a program in a directory
 * on PATH, or a glob that could match one of those.
 */
export function outputPathHazard(target: ShellWord, options: { copied?: boolean } = {}): string | undefined {
  const text = target.text;
  if (target.processSubstitution) return undefined;
  if (target.dynamic && /[*?[]/.test(text) && !text.includes('$')) {
    const pattern = globToRegExp(text);
    if (SENSITIVE_FILES.some((file) => pattern.test(file))) {
      return 'writing to a file a glob names that could be a git configuration file';
    }
  }
  if (PATH_DIRECTORIES.test(text)) {
    return 'writing into a directory on PATH (a program there shadows the one later commands name)';
  }
  const parts = text.split('/');
  const base = parts[parts.length - 1]!;
  if (base === 'config') {
    return 'writing a file named config (it can be the configuration of a git repository, which runs commands)';
  }
  if (HOOK_DIRECTORIES.has(parts[parts.length - 2] ?? '') && GIT_HOOKS.has(base)) {
    return 'writing a git hook (git runs it)';
  }
  // A .pth file is text Python reads from a site-packages folder; a model checkpoint copied to a
  // .pth name elsewhere (`cp best.pth final.pth`) is not one.
  const copiedElsewhere = options.copied && !target.dynamic && !/(?:site|dist)-packages/.test(text);
  if (base.endsWith('.pth') && !copiedElsewhere) {
    return 'writing a .pth file (Python runs its import lines when it starts, from a site-packages folder)';
  }
  return undefined;
}

const FILE_WRITERS = new Set(['tee', 'truncate', 'dd', 'cp', 'mv', 'install', 'ln', 'rsync']);

/**
 * Programs whose arguments name files they write, checked like redirection targets: the files
 * each writes (its destination: `-t DIR` or the last operand of cp, mv, install, ln and rsync;
 * every operand of tee and truncate; `of=` of dd).
 */
export function writtenFiles(name: string, words: readonly ShellWord[]): ShellWord[] {
  if (!FILE_WRITERS.has(name)) return [];
  const operands = words.slice(1).filter((word) => !word.text.startsWith('-') || word.text === '-');
  switch (name) {
    case 'tee':
    case 'truncate':
      return operands;
    case 'dd':
      return words
        .filter((word) => word.text.startsWith('of='))
        .map((word) => ({ ...word, text: word.text.slice(3) }));
    case 'cp':
    case 'mv':
    case 'install':
    case 'ln':
    case 'rsync': {
      // The destination: `-t DIR` (also in a cluster, `-rt DIR`, `-tDIR`; cp's -S takes a value
      // of its own), or the last operand. Into a directory, each source keeps its name there.
      let directory: ShellWord | undefined;
      let sources = operands;
      for (let index = 1; index < words.length && !directory; index += 1) {
        const word = words[index]!;
        const text = word.text;
        if (text === '-t' || text === '--target-directory') directory = words[index + 1];
        else if (text.startsWith('--target-directory=')) {
          directory = { ...word, text: text.slice('--target-directory='.length) };
        } else {
          const cluster = /^-([A-Za-z]+)/.exec(text)?.[1];
          const at = cluster && name !== 'rsync' ? cluster.search(/[tS]/) : -1;
          if (at >= 0 && cluster![at] === 't') {
            const rest = text.slice(at + 2);
            directory = rest !== '' ? { ...word, text: rest } : words[index + 1];
          }
        }
        if (directory) sources = operands.filter((operand) => operand !== directory);
      }
      if (!directory) {
        if (operands.length === 0) return [];
        const last = operands[operands.length - 1]!;
        sources = operands.slice(0, -1);
        // One source and a destination without a trailing slash: a directory only if its last
        // part has no extension (`cp x repo/hooks` may write repo/hooks/x; `cp a b.cfg` does not).
        const lastPart = last.text.replace(/\/+$/, '').split('/').pop() ?? '';
        if (sources.length === 1 && !last.text.endsWith('/') && lastPart.includes('.')) return [last];
        directory = last;
      }
      const into = directory.text.replace(/\/+$/, '');
      return [
        directory,
        ...sources.map((source) => ({
          ...directory!,
          dynamic: directory!.dynamic || source.dynamic,
          text: `${into}/${source.text.replace(/\/+$/, '').split('/').pop()}`,
        })),
      ];
    }
    default:
      return [];
  }
}
