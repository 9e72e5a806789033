// Wrappers: programs whose arguments are another command (`sudo`, `env`, `timeout`, `xargs`,
// `find -exec`, ...), with the options each takes, so that the command they run is found where
// the program itself finds it.

import {
  type Handler,
  HELP,
  has,
  type OptionSpec,
  optionList,
  scanOptions,
  unknownOption,
  valuesOf,
} from './options.js';
import { POSIX_SHELLS, readsStdin } from './shells.js';
import type { ShellWord } from './types.js';

const xargsSpec: OptionSpec = {
  shortValue: 'IaEdLnPsJRS',
  shortOptional: 'eil',
  shortFlags: '0oprtxh',
  long: {
    null: 'flag',
    'arg-file': 'value',
    delimiter: 'value',
    eof: 'optional',
    replace: 'optional',
    'max-lines': 'optional',
    'max-args': 'value',
    'max-chars': 'value',
    'max-procs': 'value',
    'process-slot-var': 'value',
    interactive: 'flag',
    'no-run-if-empty': 'flag',
    verbose: 'flag',
    exit: 'flag',
    'open-tty': 'flag',
    'show-limits': 'flag',
    ...HELP,
  },
};

export const xargs: Handler = (context) => {
  const scan = scanOptions(context.words, 1, xargsSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  let placeholder: string | undefined;
  for (const option of scan.options) {
    if (option.name === '-I' || option.name === '-J') placeholder = option.value?.text;
    if (option.name === '-i' || option.name === '--replace') placeholder = option.value?.text || '{}';
  }
  if (scan.end < context.words.length) {
    context.command(context.words.slice(scan.end), {
      stdin: { kind: 'closed' },
      ...(placeholder ? { placeholder } : { inputAppended: true }),
    });
  }
};

const envSpec: OptionSpec = {
  shortValue: 'uCSa',
  shortFlags: 'i0v',
  long: {
    'ignore-environment': 'flag',
    null: 'flag',
    unset: 'value',
    chdir: 'value',
    'split-string': 'value',
    argv0: 'value',
    debug: 'flag',
    'default-signal': 'optional',
    'ignore-signal': 'optional',
    'block-signal': 'optional',
    'list-signal-handling': 'flag',
    ...HELP,
  },
};

/** Splits the argument of `env -S` as GNU env does; undefined when it expands `${VAR}`. */
function splitEnvString(text: string): string[] | undefined {
  const words: string[] = [];
  let word: string | undefined;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === ' ' || char === '\t' || char === '\n') {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === '#' && word === undefined) {
      break;
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) return undefined;
      word = (word ?? '') + text.slice(index + 1, end);
      index = end;
    } else if (char === '"') {
      let end = index + 1;
      let part = '';
      for (; end < text.length && text[end] !== '"'; end += 1) {
        if (text[end] === '$') return undefined;
        if (text[end] === '\\') {
          end += 1;
          part += text[end] === '_' ? ' ' : (text[end] ?? '');
        } else part += text[end];
      }
      if (end >= text.length) return undefined;
      word = (word ?? '') + part;
      index = end;
    } else if (char === '$' || char === '\\') {
      // `${VAR}` expands from the environment; escapes are rare enough to refuse.
      return undefined;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

export const env: Handler = (context) => {
  let words = [...context.words];
  let index = 1;
  while (index < words.length) {
    const word = words[index]!;
    if (word.text === '-' || word.text === '--') {
      index += 1;
      if (word.text === '--') break;
      continue;
    }
    if (word.text.startsWith('-') && !word.dynamic) {
      const scan = scanOptions(words, index, envSpec);
      if (scan.unknown) return unknownOption(context, scan.unknown);
      const split = scan.options.find((option) => option.name === '-S' || option.name === '--split-string');
      if (split) {
        const value = split.value;
        const parts = value && !value.dynamic ? splitEnvString(value.text) : undefined;
        if (!parts) {
          context.hazard('env -S with a string that expands at run time');
          return;
        }
        // The split words take the place of the option (GNU env re-reads them as arguments).
        const at = words.indexOf(value!, index);
        const after = at >= 0 ? at + 1 : scan.end;
        words = [
          ...words.slice(0, index),
          ...parts.map((text) => ({ text, dynamic: false })),
          ...words.slice(after),
        ];
        continue;
      }
      if (scan.end === index) break;
      index = scan.end;
      continue;
    }
    const equals = word.text.indexOf('=');
    if (equals > 0) {
      context.assignment(word.text.slice(0, equals), word.text.slice(equals + 1), false);
      index += 1;
      continue;
    }
    break;
  }
  if (index < words.length) context.command(words.slice(index));
};

const sudoSpec: OptionSpec = {
  shortValue: 'ugpChrtUDRT',
  shortFlags: 'AbEeHiKklnPSsVv',
  long: {
    user: 'value',
    group: 'value',
    host: 'value',
    prompt: 'value',
    chdir: 'value',
    chroot: 'value',
    'close-from': 'value',
    role: 'value',
    type: 'value',
    'other-user': 'value',
    'command-timeout': 'value',
    askpass: 'flag',
    background: 'flag',
    bell: 'flag',
    edit: 'flag',
    login: 'flag',
    shell: 'flag',
    list: 'flag',
    'non-interactive': 'flag',
    'preserve-env': 'optional',
    'preserve-groups': 'flag',
    'reset-timestamp': 'flag',
    'remove-timestamp': 'flag',
    'set-home': 'flag',
    stdin: 'flag',
    validate: 'flag',
    ...HELP,
  },
};

export const sudo: Handler = (context) => {
  const scan = scanOptions(context.words, 1, sudoSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '-e', '--edit')) {
    context.hazard(`${context.name} -e (it runs an editor, which reads commands from its input)`);
    return;
  }
  if (has(scan, '-l', '--list', '-v', '--validate', '-k', '-K', '-V')) return;
  let index = scan.end;
  while (index < context.words.length) {
    const text = context.words[index]!.text;
    const equals = text.indexOf('=');
    if (equals <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(text.slice(0, equals))) break;
    context.assignment(text.slice(0, equals), text.slice(equals + 1), false);
    index += 1;
  }
  if (index < context.words.length) context.command(context.words.slice(index));
  else if (has(scan, '-s', '--shell', '-i', '--login')) context.hazard(`${context.name} starting a shell`);
};

const suSpec: OptionSpec = {
  shortValue: 'cgGswu',
  shortFlags: 'lmpfPhV',
  long: {
    command: 'value',
    'session-command': 'value',
    shell: 'value',
    group: 'value',
    'supp-group': 'value',
    'whitelist-environment': 'value',
    user: 'value',
    login: 'flag',
    'preserve-environment': 'flag',
    pty: 'flag',
    ...HELP,
  },
  permute: true,
};

export const su: Handler = (context) => {
  const words = context.words.map((word) => (word.text === '-' ? { text: '-l', dynamic: false } : word));
  const scan = scanOptions(words, 1, suSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '-u', '--user')) {
    // `runuser -u USER [--] COMMAND [ARG...]` runs the command itself, without a shell.
    if (context.name !== 'runuser') return unknownOption(context, '-u');
    const first = scan.positionals[0];
    if (first !== undefined) context.command(context.words.slice(first));
    return;
  }
  const shells = valuesOf(scan, '-s', '--shell');
  const shellName = shells[0]?.text.slice(shells[0].text.lastIndexOf('/') + 1);
  if (shells.length > 0 && (shells[0]!.dynamic || !POSIX_SHELLS.has(shellName ?? ''))) {
    context.hazard(`${context.name} running another program as its shell (-s)`);
    return;
  }
  const commands = valuesOf(scan, '-c', '--command', '--session-command');
  for (const command of commands) context.script(command, `the command given to ${context.name} -c`);
  if (scan.positionals.length > 1) {
    context.hazard(`${context.name} passing arguments to a shell`);
    return;
  }
  if (commands.length === 0) readsStdin(context, 'commands', true);
};

const flockSpec: OptionSpec = {
  shortValue: 'wEc',
  shortFlags: 'sxeunoFvhV',
  long: {
    shared: 'flag',
    exclusive: 'flag',
    unlock: 'flag',
    nonblock: 'flag',
    nb: 'flag',
    close: 'flag',
    'no-fork': 'flag',
    verbose: 'flag',
    wait: 'value',
    timeout: 'value',
    'conflict-exit-code': 'value',
    command: 'value',
    ...HELP,
  },
};

export const flock: Handler = (context) => {
  const scan = scanOptions(context.words, 1, flockSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  for (const command of valuesOf(scan, '-c', '--command'))
    context.script(command, 'the command given to flock -c');
  // `flock FILE -c 'command'` or `flock FILE command args`.
  const after = scan.end + 1;
  const next = context.words[after];
  if (!next) return;
  if (next.text === '-c' || next.text === '--command') {
    const command = context.words[after + 1];
    if (command) context.script(command, 'the command given to flock -c');
    return;
  }
  if (next.text.startsWith('--command=')) {
    context.script(next.text.slice('--command='.length), 'the command given to flock -c');
    return;
  }
  context.command(context.words.slice(after));
};

const scriptSpec: OptionSpec = {
  shortValue: 'cEIOBTm',
  shortOptional: 't',
  shortFlags: 'aefqhV',
  long: {
    command: 'value',
    echo: 'value',
    'log-in': 'value',
    'log-out': 'value',
    'log-io': 'value',
    'log-timing': 'value',
    'logging-format': 'value',
    timing: 'optional',
    append: 'flag',
    return: 'flag',
    flush: 'flag',
    force: 'flag',
    quiet: 'flag',
    ...HELP,
  },
  permute: true,
};

export const script: Handler = (context) => {
  const scan = scanOptions(context.words, 1, scriptSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const commands = valuesOf(scan, '-c', '--command');
  for (const command of commands) context.script(command, 'the command given to script -c');
  if (commands.length === 0 && !has(scan, '--help', '-h', '-V', '--version')) {
    context.hazard('script starting an interactive shell');
  }
};

const watchSpec: OptionSpec = {
  shortValue: 'nq',
  shortOptional: 'd',
  shortFlags: 'begcCtwxprhv',
  long: {
    interval: 'value',
    differences: 'optional',
    beep: 'flag',
    errexit: 'flag',
    chgexit: 'flag',
    color: 'flag',
    'no-color': 'flag',
    'no-title': 'flag',
    'no-wrap': 'flag',
    exec: 'flag',
    precise: 'flag',
    'no-rerun': 'flag',
    equexit: 'value',
    shotsdir: 'value',
    ...HELP,
  },
};

export const watch: Handler = (context) => {
  const scan = scanOptions(context.words, 1, watchSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const rest = context.words.slice(scan.end);
  if (rest.length === 0) return;
  // Without -x, watch joins its arguments and runs them with `sh -c`.
  if (has(scan, '-x', '--exec')) context.command(rest);
  else if (rest.some((word) => word.dynamic)) context.hazard('a command for watch computed at run time');
  else context.script(rest.map((word) => word.text).join(' '), 'the command given to watch');
};

export const find: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    if (['-exec', '-execdir', '-ok', '-okdir'].includes(words[index]!.text)) {
      let end = index + 1;
      while (end < words.length && words[end]!.text !== ';' && words[end]!.text !== '+') end += 1;
      context.command(words.slice(index + 1, end), { placeholder: '{}', stdin: { kind: 'closed' } });
      index = end;
    }
  }
};

export const fd: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (['-x', '--exec', '-X', '--exec-batch'].includes(text)) {
      let end = index + 1;
      while (end < words.length && words[end]!.text !== ';') end += 1;
      context.command(words.slice(index + 1, end), { placeholder: '{', stdin: { kind: 'closed' } });
      index = end;
    }
  }
};

export const parallel: Handler = (context) => {
  const { words } = context;
  const separator = words.findIndex((word, index) => index > 0 && /^:::[+]?$|^::::[+]?$/.test(word.text));
  const head = words.slice(1, separator < 0 ? words.length : separator);
  const command = head.filter((word) => !word.text.startsWith('-'));
  if (
    head.some((word) => word.text.startsWith('-')) ||
    command.length === 0 ||
    command.some((word) => word.dynamic)
  ) {
    context.hazard(
      'GNU parallel running commands this policy cannot read (options, or commands from its input)',
    );
    return;
  }
  context.script(command.map((word) => word.text).join(' '), 'the command given to parallel');
  if (command[0]!.text.includes('{')) context.hazard('a command name parallel takes from its input');
};

export const entr: Handler = (context) => {
  const scan = scanOptions(context.words, 1, { shortFlags: 'acdnprsz' });
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const rest = context.words.slice(scan.end);
  if (rest.length === 0) return;
  if (has(scan, '-s')) context.script(rest[0]!, 'the command given to entr -s');
  else context.command(rest, { placeholder: '/_' });
};

export const hyperfine: Handler = (context) => {
  const scan = scanOptions(context.words, 1, {
    shortValue: 'wmMrpcsSPLDNuin',
    shortFlags: 'Nih',
    long: {
      warmup: 'value',
      'min-runs': 'value',
      'max-runs': 'value',
      runs: 'value',
      setup: 'value',
      prepare: 'value',
      conclude: 'value',
      cleanup: 'value',
      shell: 'value',
      'parameter-scan': 'value',
      'parameter-step-size': 'value',
      'parameter-list': 'value',
      'export-json': 'value',
      'export-csv': 'value',
      'export-markdown': 'value',
      'export-asciidoc': 'value',
      'export-orgmode': 'value',
      style: 'value',
      'time-unit': 'value',
      output: 'value',
      input: 'value',
      'command-name': 'value',
      'ignore-failure': 'optional',
      'show-output': 'flag',
      sort: 'value',
      ...HELP,
    },
    permute: true,
  });
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '-S', '--shell', '-P', '--parameter-scan', '-L', '--parameter-list', '-D')) {
    context.hazard('hyperfine with a shell or parameters this policy cannot check');
    return;
  }
  for (const value of valuesOf(scan, '-p', '--prepare', '-s', '--setup', '-c', '--cleanup', '--conclude')) {
    context.script(value, 'a command given to hyperfine');
  }
  for (const index of scan.positionals) context.script(context.words[index]!, 'a command given to hyperfine');
};

/**
 * capsh: `--` runs /bin/bash (or `--shell=PATH`) with the words after it, `==` runs capsh again
 * with them (`-+` and `=+` likewise through cap_launch); its other arguments are settings.
 */
export const capsh: Handler = (context) => {
  const { words } = context;
  let shellWord: ShellWord = { text: '/bin/bash', dynamic: false };
  for (let index = 1; index < words.length; index += 1) {
    const word = words[index]!;
    if (word.dynamic) {
      context.hazard('a capsh argument computed at run time');
      return;
    }
    if (word.text.startsWith('--shell=')) shellWord = { text: word.text.slice(8), dynamic: false };
    else if (word.text === '--' || word.text === '-+') {
      context.command([shellWord, ...words.slice(index + 1)]);
      return;
    } else if (word.text === '==' || word.text === '=+') {
      context.command([{ text: 'capsh', dynamic: false }, ...words.slice(index + 1)]);
      return;
    }
  }
};

const startStopSpec = optionList(
  '-S --start -K --stop -T --status -H --help -V --version --pid= --ppid= -p= --pidfile= -x= --exec= -n= --name= -u= --user= -g= --group= -c= --chuid= -s= --signal= -a= --startas= -r= --chroot= -d= --chdir= -N= --nicelevel= -P= --procsched= -I= --iosched= -k= --umask= -b --background --notify-await --notify-timeout= -C --no-close -O= --output= -m --make-pidfile --remove-pidfile -R= --retry= -t --test -o --oknodo -q --quiet -v --verbose',
  { permute: true },
);

/**
 * start-stop-daemon (dpkg): `--start` runs `--startas PATH` (default `--exec PATH`) with the
 * words after `--`.
 */
export const startStopDaemon: Handler = (context) => {
  const scan = scanOptions(context.words, 1, startStopSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (!has(scan, '-S', '--start') || has(scan, '-t', '--test')) return;
  const program = valuesOf(scan, '-a', '--startas')[0] ?? valuesOf(scan, '-x', '--exec')[0];
  if (!program) return;
  context.command([program, ...scan.positionals.map((index) => context.words[index]!)]);
};

/** A multi-call binary (`busybox rm x`): the applet and its arguments are a command. */
export const multiCall: Handler = (context) => {
  const applet = context.words[1];
  if (applet && !applet.text.startsWith('-')) context.command(context.words.slice(1));
};

/** `coreutils --coreutils-prog=rm x`: the multi-call build of coreutils. */
export const coreutils: Handler = (context) => {
  const program = context.words[1]?.text.match(/^--coreutils-prog=(.+)$/s);
  if (program)
    context.command([{ text: program[1]!, dynamic: context.words[1]!.dynamic }, ...context.words.slice(2)]);
};

/** `ccache COMPILER ARGS`: with an option first, ccache runs nothing (`ccache -s`). */
export const ccache: Handler = (context) => {
  const first = context.words[1];
  if (first && !first.text.startsWith('-')) context.command(context.words.slice(1));
};

/** `sg GROUP [-c] COMMAND`: the command is a string for /bin/sh. */
export const sg: Handler = (context) => {
  const rest = context.words.slice(2).filter((word) => word.text !== '-c');
  if (rest.length === 0) context.hazard('sg starting a shell');
  else if (rest.some((word) => word.dynamic)) context.hazard('a command for sg computed at run time');
  else context.script(rest.map((word) => word.text).join(' '), 'the command given to sg');
};
