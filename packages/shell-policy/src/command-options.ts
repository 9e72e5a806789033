// Programs with options or input that run commands or load code (`tar --to-command`, `rg --pre`,
// `ssh -o ProxyCommand`, `make --eval`, `sqlite3 .shell`, ...), and programs that always do.

import {
  type Handler,
  HELP,
  has,
  longOptionNamed,
  type OptionSpec,
  optionList,
  scanOptions,
  unknownOption,
  valuesOf,
} from './options.js';
import { readsStdin, STDIN_PATH } from './shells.js';
import type { ProgramContext, ShellWord } from './types.js';

const TAR_COMMAND_OPTIONS = [
  'to-command',
  'use-compress-program',
  'info-script',
  'new-volume-script',
  'checkpoint-action',
  'rsh-command',
  'rmt-command',
];

export const tar: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (text === '--') break;
    if (text.startsWith('--')) {
      // `--checkpoint` is an option of its own, not an abbreviation of --checkpoint-action.
      if (longOptionNamed(text, TAR_COMMAND_OPTIONS, ['checkpoint']) !== undefined) {
        context.hazard(`tar ${text.split('=')[0]} (it runs a command)`);
      }
    } else if (text.startsWith('-') || index === 1) {
      // Short clusters (and the old-style first argument): -I runs a compressor, -F a script.
      if (/[IF]/.test(text.replace(/^-/, ''))) context.hazard('tar -I or -F (it runs a command)');
    }
  }
};

export const rg: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (text === '--') break;
    if (text === '--pre' && words[index + 1]) {
      context.command([words[index + 1]!], { stdin: { kind: 'closed' } });
      index += 1;
    } else if (text.startsWith('--pre=')) {
      context.command([{ text: text.slice('--pre='.length), dynamic: words[index]!.dynamic }], {
        stdin: { kind: 'closed' },
      });
    } else if (text === '-e' || text === '--regexp' || text === '-f' || text === '--file') {
      index += 1;
    }
  }
};

export const zip: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    const text = word.text;
    const long = longOptionNamed(text, ['unzip-command']);
    if (text === '-TT' || (long !== undefined && !text.includes('='))) {
      const value = words[index + 1];
      if (value) context.script(value, 'the test command given to zip');
      index += 1;
    } else if (long !== undefined || (text.startsWith('-TT') && text.length > 3)) {
      context.script(
        { text: text.replace(/^(?:--[^=]*=|-TT=?)/, ''), dynamic: word.dynamic },
        'the test command given to zip',
      );
    }
  }
};

const makeSpec = optionList(
  [
    '-b -m -B --always-make -C= --directory= -d --debug[=] -e --environment-overrides -E= --eval=',
    '-f= --file= --makefile= -h --help -i --ignore-errors -I= --include-dir= -j[=] --jobs[=] -k --keep-going',
    '-l[=] --load-average[=] --max-load[=] -L --check-symlink-times -n --just-print --dry-run --recon',
    '-o= --old-file= --assume-old= -O[=] --output-sync[=] -p --print-data-base -q --question',
    '-r --no-builtin-rules -R --no-builtin-variables -s --silent --quiet --no-silent -S --no-keep-going --stop',
    '-t --touch --trace -v --version -w --print-directory --no-print-directory -W= --what-if= --new-file=',
    '--assume-new= --warn-undefined-variables --shuffle[=] --jobserver-auth= --jobserver-style=',
  ].join(' '),
  { permute: true },
);

/** Variables that change what make runs, given on its command line. */
const MAKE_RUNNING_VARIABLES = ['SHELL', '.SHELLFLAGS', 'MAKESHELL', 'MAKEFLAGS', 'MAKEFILES', 'MAKE'];

/** GNU make, read with the option list of `make --help` (options and assignments may be mixed). */
export const make: Handler = (context) => {
  // An expansion after a literal option letter (`-j$(nproc)`) leaves the letter known.
  const words = context.words.map((word) =>
    word.dynamic && /^-[A-Za-z-]/.test(word.text) ? { ...word, dynamic: false } : word,
  );
  const scan = scanOptions(words, 1, makeSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '-E', '--eval')) context.hazard('make --eval (it reads makefile text from the command line)');
  for (const file of valuesOf(scan, '-f', '--file', '--makefile')) {
    if (file.processSubstitution || STDIN_PATH.test(file.text)) {
      context.hazard('make reading a makefile from standard input');
    }
  }
  for (const index of scan.positionals) {
    const word = context.words[index]!;
    const assignment = /^([A-Za-z_.][A-Za-z0-9_.]*)\s*[:+?!]?=(.*)$/s.exec(word.text);
    if (assignment) {
      const name = assignment[1]!;
      if (MAKE_RUNNING_VARIABLES.includes(name)) {
        context.hazard(`make ${name}= (it changes what make runs)`);
      } else if (['CC', 'CXX', 'CPP', 'LD', 'AR', 'AS', 'FC'].includes(name)) {
        context.script(assignment[2]!, `the program given to make as ${name}`);
      }
    } else if (word.dynamic && /^[$`]/.test(word.text)) {
      context.hazard('a make argument computed at run time (it can be an option or an assignment)');
    }
  }
};

/**
 * `--option=PROGRAM` / `--option PROGRAM`, however abbreviated (`sort --co=rm`), naming a program
 * to run (`program`) or a command string for a shell (`script`).
 */
export function programOption(options: readonly string[], kind: 'program' | 'script'): Handler {
  return (context) => {
    const { words } = context;
    for (let index = 1; index < words.length; index += 1) {
      const word = words[index]!;
      const text = word.text;
      if (text === '--') return;
      const option = longOptionNamed(text, options);
      if (option === undefined) continue;
      const equals = text.indexOf('=');
      const value = equals >= 0 ? { text: text.slice(equals + 1), dynamic: word.dynamic } : words[index + 1];
      if (!value) continue;
      if (kind === 'program') context.command([value], { stdin: { kind: 'closed' } });
      else context.script(value, `the command given to ${context.name} --${option}`);
    }
  };
}

/**
 * wget: `--use-askpass=PROGRAM` runs a program, and `-e`/`--execute` and `--config` take .wgetrc
 * commands (among them `use_askpass`), which are not read here.
 */
export const wget: Handler = (context) => {
  const scan = scanOptions(context.words, 1, {
    shortValue: 'aABDeiIlnoOPQRtTUwX',
    lenientLong: true,
    permute: true,
  });
  if (has(scan, '-e')) context.hazard('wget -e (it takes .wgetrc commands, which can run a program)');
  for (const word of context.words.slice(1)) {
    if (word.text === '--') break;
    const option = longOptionNamed(word.text, ['execute', 'config']);
    if (option !== undefined)
      context.hazard(`wget --${option} (it takes .wgetrc commands, which can run a program)`);
  }
  askpass(context);
};

const askpass = programOption(['use-askpass'], 'program');

/** The dynamic loader run as a program: `ld.so [options] PROGRAM args`. */
export const loader: Handler = (context) => {
  const scan = scanOptions(context.words, 1, {
    shortFlags: '',
    long: {
      list: 'flag',
      verify: 'flag',
      'inhibit-cache': 'flag',
      'library-path': 'value',
      'inhibit-rpath': 'value',
      audit: 'value',
      preload: 'value',
      argv0: 'value',
      'glibc-hwcaps-prefix': 'value',
      'glibc-hwcaps-mask': 'value',
      'list-tunables': 'flag',
      'list-diagnostics': 'flag',
      ...HELP,
    },
  });
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '--audit', '--preload', '--library-path')) {
    context.hazard('the dynamic loader loading libraries named on its command line');
    return;
  }
  if (scan.end < context.words.length) context.command(context.words.slice(scan.end));
};

// ssh: options whose values run local commands or load code.
const SSH_COMMAND_OPTIONS = new Set([
  'proxycommand',
  'localcommand',
  'permitlocalcommand',
  'knownhostscommand',
  'pkcs11provider',
  'securitykeyprovider',
  'include',
  'remotecommand',
  'proxyusefdpass',
]);

function sshOptionHazard(context: ProgramContext, value: ShellWord | undefined): void {
  if (!value) return;
  if (value.dynamic) {
    context.hazard(`${context.name} -o with a value computed at run time`);
    return;
  }
  const key = value.text.split(/[=\s]/)[0]!.toLowerCase();
  if (SSH_COMMAND_OPTIONS.has(key)) {
    context.hazard(`${context.name} -o ${value.text.split(/[=\s]/)[0]} (it runs or loads a command)`);
  }
}

const sshSpec: OptionSpec = { shortValue: 'BbcDEeFIiJLlmOopQRSWw', shortFlags: '46AaCfGgKkMNnqsTtVvXxYy' };

export const ssh: Handler = (context) => {
  const { words } = context;
  let index = 1;
  let host: ShellWord | undefined;
  // ssh reads options both before and after the destination.
  for (;;) {
    const scan = scanOptions(words, index, sshSpec);
    if (scan.unknown) return unknownOption(context, scan.unknown);
    for (const option of scan.options) {
      if (option.name === '-o') sshOptionHazard(context, option.value);
      if (option.name === '-F' && option.value?.text !== '/dev/null') {
        context.hazard('ssh -F (a configuration file can run commands)');
      }
      if (option.name === '-I') context.hazard('ssh -I (it loads a library)');
    }
    index = scan.end;
    if (host || index >= words.length) break;
    host = words[index];
    index += 1;
  }
  const remote = words.slice(index);
  if (remote.length > 0) {
    if (remote.some((word) => word.dynamic)) context.hazard('a remote command computed at run time');
    else context.script(remote.map((word) => word.text).join(' '), 'the remote command');
  } else if (host && context.stdin.kind !== 'inherited' && context.stdin.kind !== 'closed') {
    context.hazard('a remote shell reading commands from standard input');
  }
};

export const scpLike: Handler = (context) => {
  const scan = scanOptions(context.words, 1, {
    shortValue: 'cDFiJlLoPSXbBR',
    permute: true,
  });
  for (const option of scan.options) {
    if (option.name === '-o') sshOptionHazard(context, option.value);
    else if (option.name === '-F')
      context.hazard(`${context.name} -F (a configuration file can run commands)`);
    else if (option.name === '-S' || option.name === '-D') {
      if (option.value) context.command([option.value]);
    } else if (option.name === '-b') context.hazard('sftp -b (a batch file can run local commands)');
  }
};

export const rsync: Handler = (context) => {
  const scan = scanOptions(context.words, 1, {
    shortValue: 'eBfTM',
    long: { rsh: 'value', 'rsync-path': 'value', 'remote-option': 'value' },
    lenientLong: true,
    permute: true,
  });
  for (const option of scan.options) {
    if (option.name === '-e' || option.name === '--rsh') {
      if (option.value) context.script(option.value, 'the remote shell given to rsync');
    } else if (['--rsync-path', '-M', '--remote-option'].includes(option.name)) {
      context.hazard(`rsync ${option.name} (it runs a command)`);
    }
  }
};

export const sqlite: Handler = (context) => {
  const args = context.words.slice(1);
  const valueOptions = new Set([
    '-cmd',
    '-init',
    '-separator',
    '-newline',
    '-nullvalue',
    '-vfs',
    '-mmap',
    '-maxsize',
    '-pagecache',
    '-lookaside',
    '-heap',
  ]);
  const positional: ShellWord[] = [];
  // `-cmd` statements run before the others, wherever the option stands.
  const statements: ShellWord[] = [];
  let safe = false;
  for (let index = 0; index < args.length; index += 1) {
    const text = args[index]!.text.replace(/^--/, '-');
    if (text.startsWith('-')) {
      if (text === '-cmd' && args[index + 1]) statements.push(args[index + 1]!);
      if (text === '-init') {
        context.hazard('sqlite3 -init (a start-up file of dot-commands, which can run shell commands)');
      }
      if (text === '-safe') safe = true;
      if (valueOptions.has(text)) index += 1;
      continue;
    }
    positional.push(args[index]!);
  }
  statements.push(...positional.slice(1));
  if (positional.length <= 1) {
    readsStdin(context, 'statements', false);
    if (statements.length === 0) return;
  }
  if (safe) return;
  for (const statement of statements) {
    if (
      statement.dynamic ||
      /(?:^|\n|;)\s*\./.test(statement.text) ||
      /load_extension/i.test(statement.text)
    ) {
      context.hazard('a sqlite3 dot-command or extension (they can run shell commands)');
      return;
    }
  }
};

export const databaseShell: Handler = (context) => {
  const args = context.words.slice(1);
  const codeOptions = context.name === 'psql' ? ['-c', '--command'] : ['-e', '--execute'];
  let code: ShellWord | undefined;
  let file = false;
  for (let index = 0; index < args.length; index += 1) {
    const text = args[index]!.text;
    if (codeOptions.includes(text)) code = args[index + 1];
    else if (codeOptions.some((option) => option.startsWith('--') && text.startsWith(`${option}=`))) {
      code = { text: text.slice(text.indexOf('=') + 1), dynamic: args[index]!.dynamic };
    } else if (text === '-f' || text.startsWith('--file')) file = true;
    else if (/^--pager(?:=|$)/.test(text) && context.name !== 'psql') {
      context.hazard(`${context.name} --pager (it runs a command)`);
      return;
    }
  }
  if (code) {
    if (code.dynamic || /\\!|\\[og]\s*\||\bsystem\b|\bprogram\b/i.test(code.text)) {
      context.hazard(`${context.name} statements that run shell commands`);
    }
    return;
  }
  if (!file) readsStdin(context, 'statements', false);
};

export const emacs: Handler = (context) => {
  if (
    context.words
      .slice(1)
      .some((word) =>
        /^(?:--eval|-l|--load|-f|--funcall|--batch|-batch|--script|-script|-x)(?:=|$)/.test(word.text),
      )
  ) {
    context.hazard('emacs running Lisp given on its command line');
  }
};

const manSpec = optionList(
  [
    '-C= --config-file= -d --debug -D --default --warnings[=] -f --whatis -k --apropos -K --global-apropos',
    '-l --local-file -w --where --path --location -W --where-cat --location-cat -c --catman -R= --recode=',
    '-L= --locale= -m= --systems= -M= --manpath= -S= -s= --sections= -e= --extension= -i --ignore-case',
    '-I --match-case --regex --wildcard --names-only -a --all -u --update --no-subpages -P= --pager=',
    '-r= --prompt= -7 --ascii -E= --encoding= --no-hyphenation --nh --no-justification --nj -p= --preprocessor=',
    '-t --troff -T[=] --troff-device[=] -H[=] --html[=] -X[=] --gxditview[=] -Z --ditroff -? --help --usage',
    '-V --version',
  ].join(' '),
  { permute: true },
);

/** man (man-db): a pager, a browser or a configuration file (which can define them) runs commands. */
export const man: Handler = (context) => {
  const scan = scanOptions(context.words, 1, manSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const running = scan.options.find((option) =>
    ['-P', '--pager', '-H', '--html', '-C', '--config-file', '-X', '--gxditview'].includes(option.name),
  );
  if (running) context.hazard(`man ${running.name} (a pager, browser or configuration that runs a command)`);
};

/** Programs that run commands they read from their input or arguments in their own language. */
export const ALWAYS_HAZARD: Record<string, string> = {
  ed: 'ed (it runs ! commands from its input)',
  red: 'ed (it runs ! commands from its input)',
  ex: 'ex (it runs commands from its input)',
  vi: 'vi (it runs commands from its input)',
  vim: 'vim (it runs commands from its input and options)',
  nvim: 'nvim (it runs commands from its input and options)',
  view: 'vim (it runs commands from its input and options)',
  vimdiff: 'vim (it runs commands from its input and options)',
  rvim: 'vim (it runs commands from its input and options)',
  gvim: 'vim (it runs commands from its input and options)',
  gdb: 'gdb (it runs shell commands from its input and options)',
  lldb: 'lldb (it runs shell commands from its input and options)',
  dc: 'dc (its ! runs shell commands)',
  tmux: 'tmux (it runs commands in a terminal this policy cannot see)',
  screen: 'screen (it runs commands in a terminal this policy cannot see)',
  at: 'at (it schedules commands from its input)',
  batch: 'batch (it schedules commands from its input)',
  crontab: 'crontab (it schedules commands)',
  'systemd-run': 'systemd-run (it starts commands outside this shell)',
  perf: 'perf (it runs commands this policy does not parse)',
  // Editors run commands from their input (`:!cmd`) and pick the program from the environment.
  editor: 'an editor (it runs commands from its input)',
  'sensible-editor': 'an editor (it runs commands from its input)',
  sudoedit: 'sudoedit (it runs an editor, which reads commands from its input)',
  vipe: 'vipe (it runs an editor on a pipe)',
  vidir: 'vidir (it runs an editor)',
  visudo: 'visudo (it runs an editor)',
  vipw: 'vipw (it runs an editor)',
  vigr: 'vigr (it runs an editor)',
  // Programs that run other programs in ways this parser does not follow.
  'run-parts': 'run-parts (it runs every program in a directory, names this policy cannot see)',
  scriptlive: 'scriptlive (it replays a recorded session into a shell)',
  sem: 'sem (GNU parallel: it runs commands this policy cannot read)',
  watchexec: 'watchexec (it runs its command through a shell whenever files change)',
  uftrace: 'uftrace (it runs commands this policy does not parse)',
  heaptrack: 'heaptrack (it runs commands this policy does not parse)',
  rr: 'rr (it records and replays commands this policy does not parse)',
  'systemd-nspawn': 'systemd-nspawn (it starts commands in a container outside this shell)',
  machinectl: 'machinectl (it starts commands outside this shell)',
  'flatpak-spawn': 'flatpak-spawn (it starts commands outside this shell)',
  toolbox: 'toolbox (it starts commands in another container)',
  'distrobox-enter': 'distrobox-enter (it starts commands in another container)',
  direnv: 'direnv (it runs the bash code of .envrc files)',
  dotenv: 'dotenv (it sets variables read from a file for the command it runs)',
  'env-cmd': 'env-cmd (it sets variables read from a file for the command it runs)',
  envdir: 'envdir (it sets variables read from the files of a directory)',
  xterm: 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  'x-terminal-emulator': 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  'gnome-terminal': 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  konsole: 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  urxvt: 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  kitty: 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  alacritty: 'a terminal emulator (it runs commands in a terminal this policy cannot see)',
  byobu: 'byobu (it runs commands in a terminal this policy cannot see)',
  incrontab: 'incrontab (it schedules commands)',
  run0: 'run0 (it starts commands through systemd, outside this shell)',
};

/** APT options that are data; any other `-o` can set a hook command or dpkg options. */
const HARMLESS_APT_OPTION =
  /^(?:APT::Get::(?:Assume-Yes|Fix-Broken|Show-Versions|Fix-Missing|Download-Only)|APT::Install-(?:Recommends|Suggests)|Acquire::(?:Retries|https?::Timeout|Check-Valid-Until|Languages)|Debug::[\w:-]+|quiet)=|^Dpkg::Options::=--force-[\w-]+$/i;

/** apt, apt-get and apt-cache: `-o KEY=VALUE` can name hook commands (`*::Pre-Invoke`), `-c` a configuration file. */
export const apt: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    const text = word.text;
    if (text === '--') break;
    const long = longOptionNamed(text, ['option', 'config-file']);
    const short = /^-[A-Za-z]*([oc])(.*)$/s.exec(text);
    const kind =
      long === 'config-file' || (short && !text.startsWith('--') && short[1] === 'c')
        ? 'config'
        : long === 'option' || (short && !text.startsWith('--') && short[1] === 'o')
          ? 'option'
          : undefined;
    if (kind === undefined) continue;
    if (kind === 'config') {
      context.hazard(`${context.name} -c (a configuration file, which can name hook commands)`);
      return;
    }
    const attachedValue = text.includes('=') && long ? text.slice(text.indexOf('=') + 1) : short?.[2];
    const value = attachedValue ? { text: attachedValue, dynamic: word.dynamic } : words[index + 1];
    if (value && (value.dynamic || !HARMLESS_APT_OPTION.test(value.text))) {
      context.hazard(
        `${context.name} -o ${value.text.split('=')[0]} (APT options can name hook commands and dpkg options)`,
      );
      return;
    }
  }
};

/** dpkg: `--pre-invoke=COMMAND` and `--post-invoke=COMMAND` run hooks through `sh -c`. */
export const dpkg: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    const option = longOptionNamed(word.text, ['pre-invoke', 'post-invoke']);
    if (option === undefined) continue;
    const value = word.text.includes('=')
      ? { text: word.text.slice(word.text.indexOf('=') + 1), dynamic: word.dynamic }
      : words[index + 1];
    if (value) context.script(value, `the hook given to dpkg --${option}`);
  }
};

/** netcat and ncat: `-e PROGRAM` runs a program on the connection; ncat's `-c`/`--sh-exec` a command string. */
export const netcat: Handler = (context) => {
  const { words } = context;
  const shellOption = context.name === 'ncat' || context.name === 'nc.traditional';
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    const text = word.text;
    if (text === '--') break;
    const long = longOptionNamed(text, ['exec', 'sh-exec', 'lua-exec']);
    if (long === 'lua-exec') {
      context.hazard(`${context.name} --lua-exec (it runs a Lua program on the connection)`);
      continue;
    }
    const short = !text.startsWith('--') ? /^-[A-Za-z0-9]*?([ec])(.*)$/s.exec(text) : null;
    const isScript = long === 'sh-exec' || (short?.[1] === 'c' && shellOption);
    const isProgram = long === 'exec' || short?.[1] === 'e';
    if (!isScript && !isProgram) continue;
    const attachedValue = long && text.includes('=') ? text.slice(text.indexOf('=') + 1) : short?.[2];
    const value = attachedValue ? { text: attachedValue, dynamic: word.dynamic } : words[index + 1];
    if (!value) continue;
    if (isScript) context.script(value, `the command given to ${context.name} -c`);
    else context.script(value, `the program given to ${context.name} -e`);
  }
};

/** socat: an `EXEC:` or `SYSTEM:` address runs a command (its options follow a comma). */
export const socat: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    const match = /^(?:EXEC|SYSTEM):(.*)$/is.exec(word.text);
    if (!match) continue;
    if (word.dynamic) {
      context.hazard('a socat command address computed at run time');
      continue;
    }
    context.script(match[1]!.split(',')[0]!, 'the command a socat address runs');
  }
};

/**
 * C compilers (gcc, clang): `-wrapper PROG,ARGS` runs every subprogram through PROG; `-B DIR`
 * makes them run programs found in DIR; `-specs=FILE` and plugins change what they run or load.
 */
export const compiler: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    const text = word.text;
    if (text === '-wrapper' && words[index + 1]) {
      const value = words[index + 1]!;
      context.command(
        value.text.split(',').map((part) => ({ text: part, dynamic: value.dynamic })),
        { stdin: { kind: 'closed' } },
      );
      index += 1;
    } else if (/^-B/.test(text)) {
      context.hazard(`${context.name} -B (it runs the compiler's programs from another directory)`);
    } else if (/^--?specs[= ]?/.test(text) || /^-f(?:pass-)?plugin[=-]/.test(text) || text === '-load') {
      context.hazard(`${context.name} ${text.split('=')[0]} (it changes what the compiler runs or loads)`);
    }
  }
};

/** Download tools whose options name a command to run when a download ends (aria2c, yt-dlp). */
export const downloadHooks: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    const option =
      context.name === 'aria2c'
        ? /^--on-(?:download|bt-download)-\w+(?:=|$)/.exec(word.text)
        : /^--exec(?:-before-download)?(?:=|$)/.exec(word.text);
    if (option) {
      context.hazard(`${context.name} ${word.text.split('=')[0]} (it runs a command)`);
      return;
    }
  }
};

/** rustc: `-C linker=PROGRAM` runs that program to link. */
export const rustc: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    const value =
      text === '-C' || text === '--codegen'
        ? words[index + 1]?.text
        : /^(?:-C|--codegen=)(.+)$/s.exec(text)?.[1];
    if (value !== undefined && /^(?:linker|link-self-contained|linker-flavor)=/.test(value)) {
      context.hazard(`rustc -C ${value.split('=')[0]} (it runs another program to link)`);
      return;
    }
  }
};

/** Mercurial: `--config SECTION.KEY=VALUE` can set hooks and aliases, which run commands. */
export const hg: Handler = (context) => {
  if (context.words.some((word) => /^--config(?:=|$)/.test(word.text))) {
    context.hazard('hg --config (hooks and aliases set there run commands)');
  }
};

/**
 * less: a lesskey file (`-k`, `--lesskey-file`, `--lesskey-src`, `--lesskey-content`) can set
 * LESSOPEN, an input preprocessor less runs even when its output is not a terminal.
 */
export const less: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    if (word.text === '--') return;
    const long = longOptionNamed(word.text, ['lesskey-file', 'lesskey-src', 'lesskey-content']);
    if (long !== undefined || /^-[A-Za-z#]*k/.test(word.text)) {
      context.hazard(
        `less ${long ? `--${long}` : '-k'} (a lesskey file can set LESSOPEN, which runs a command)`,
      );
      return;
    }
  }
};
