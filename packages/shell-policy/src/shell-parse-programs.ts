// What common programs run besides themselves, for the shell parser: wrappers (`sudo`, `env`,
// `timeout`, `xargs`, ...) whose arguments are another command, programs with options or scripts
// that run a command string (`sed`'s `e`, `rg --pre`, `git -c`, `tar --to-command`,
// `ssh -o ProxyCommand`, `flock -c`, ...), shells and interpreters and where they read their
// program from, and the bash builtins that run strings or change later commands (`eval`, `source`,
// `alias`, `trap`, `hash -p`, `declare -n`, ...). Options are read the way getopt reads them
// (clusters, attached values, unambiguous abbreviations of long options); an option a wrapper does
// not know makes the wrapped command unknowable, so it is reported rather than guessed.

import { isSensitiveVariable } from './shell-parse-environment.js';
import type { ProgramContext, ShellWord } from './types.js';

type OptionKind = 'flag' | 'value' | 'optional';

interface OptionSpec {
  /** Short options that take a value (the rest of the cluster, or the next word). */
  shortValue?: string;
  /** Short options whose value is optional and attached only (`-i.bak`). */
  shortOptional?: string;
  /** Short flags; when absent, any other letter is taken for a flag. */
  shortFlags?: string;
  /** Long options, without the dashes. */
  long?: Record<string, OptionKind>;
  /** Unknown long options are flags (their `=value` attached) rather than unknown. */
  lenientLong?: boolean;
  /** `-5` (nice): a number is an option. */
  numeric?: boolean;
  /** GNU permutation: options may follow positionals (sed, git config, su). */
  permute?: boolean;
  /** `+o name` (shells): `+` starts options too. */
  plus?: boolean;
}

interface ParsedOption {
  /** `-c` or `--command` (the full long name when abbreviated). */
  name: string;
  value?: ShellWord;
}

interface OptionScan {
  options: ParsedOption[];
  /** Indexes of the positional words seen (all of them when permuting). */
  positionals: number[];
  /** Where scanning stopped: the first positional (without permutation), or the end. */
  end: number;
  /** The first option the spec does not know. */
  unknown?: string;
}

const HELP: Record<string, OptionKind> = { help: 'flag', version: 'flag' };

function attached(word: ShellWord, text: string): ShellWord {
  return { text, dynamic: word.dynamic };
}

/** Reads options the way getopt_long does; stops at `--`. */
function scanOptions(words: readonly ShellWord[], start: number, spec: OptionSpec): OptionScan {
  const options: ParsedOption[] = [];
  const positionals: number[] = [];
  const long = spec.long ?? {};
  let index = start;
  while (index < words.length) {
    const word = words[index]!;
    const text = word.text;
    if (text === '--') {
      for (let rest = index + 1; rest < words.length; rest += 1) positionals.push(rest);
      return { options, positionals, end: spec.permute ? words.length : index + 1 };
    }
    const isOption = (text.startsWith('-') || (spec.plus && text.startsWith('+'))) && text.length > 1;
    if (!isOption || word.dynamic) {
      if (!spec.permute) return { options, positionals: [index], end: index };
      positionals.push(index);
      index += 1;
      continue;
    }
    if (spec.numeric && /^-[0-9]+$/.test(text)) {
      options.push({ name: text });
      index += 1;
      continue;
    }
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const given = text.slice(2, equals < 0 ? undefined : equals);
      let name = given in long ? given : undefined;
      if (name === undefined) {
        const candidates = Object.keys(long).filter((candidate) => candidate.startsWith(given));
        if (candidates.length === 1) name = candidates[0];
      }
      if (name === undefined) {
        if (!spec.lenientLong) return { options, positionals, end: index, unknown: text };
        options.push({
          name: `--${given}`,
          ...(equals >= 0 ? { value: attached(word, text.slice(equals + 1)) } : {}),
        });
        index += 1;
        continue;
      }
      const kind = long[name]!;
      if (equals >= 0) {
        options.push({ name: `--${name}`, value: attached(word, text.slice(equals + 1)) });
        index += 1;
      } else if (kind === 'value') {
        const value = words[index + 1];
        options.push({ name: `--${name}`, ...(value ? { value } : {}) });
        index += 2;
      } else {
        options.push({ name: `--${name}` });
        index += 1;
      }
      continue;
    }
    // A cluster of short options: `-xvf file`, `-n1`, `-i.bak`.
    const sign = text[0]!;
    let consumed = 1;
    for (let at = 1; at < text.length; at += 1) {
      const letter = text[at]!;
      const rest = text.slice(at + 1);
      if (spec.shortValue?.includes(letter)) {
        if (rest !== '') options.push({ name: `${sign}${letter}`, value: attached(word, rest) });
        else {
          const value = words[index + 1];
          options.push({ name: `${sign}${letter}`, ...(value ? { value } : {}) });
          consumed = 2;
        }
        break;
      }
      if (spec.shortOptional?.includes(letter)) {
        options.push({ name: `${sign}${letter}`, ...(rest !== '' ? { value: attached(word, rest) } : {}) });
        break;
      }
      if (spec.shortFlags === undefined || spec.shortFlags.includes(letter)) {
        options.push({ name: `${sign}${letter}` });
        continue;
      }
      return { options, positionals, end: index, unknown: `${sign}${letter}` };
    }
    index += consumed;
  }
  return { options, positionals, end: words.length };
}

function has(scan: OptionScan, ...names: string[]): boolean {
  return scan.options.some((option) => names.includes(option.name));
}

function valuesOf(scan: OptionScan, ...names: string[]): ShellWord[] {
  return scan.options
    .filter((option) => names.includes(option.name) && option.value)
    .map((option) => option.value!);
}

function unknownOption(context: ProgramContext, option: string): void {
  context.hazard(
    `an option of ${context.name} this policy does not know (${option}), so it cannot tell what ${context.name} runs`,
  );
}

/** A wrapper: options, `positional` fixed arguments, then the command it runs. */
function wrapper(
  spec: OptionSpec,
  options: { positional?: number; needsCommand?: string; noCommandWith?: string[] } = {},
): Handler {
  return (context) => {
    const scan = scanOptions(context.words, 1, spec);
    if (scan.unknown) return unknownOption(context, scan.unknown);
    if (options.noCommandWith && has(scan, ...options.noCommandWith)) return;
    const start = scan.end + (options.positional ?? 0);
    if (start < context.words.length) context.command(context.words.slice(start));
    else if (options.needsCommand) context.hazard(options.needsCommand);
  };
}

type Handler = (context: ProgramContext) => void;

// ---- shells and interpreters -----------------------------------------------------------------

const POSIX_SHELLS = new Set([
  'sh',
  'bash',
  'dash',
  'ash',
  'ksh',
  'ksh93',
  'mksh',
  'lksh',
  'pdksh',
  'oksh',
  'loksh',
  'yash',
  'posh',
  'rbash',
  'hush',
]);
/** Shells whose syntax is not bash's: what they run cannot be parsed here. */
const OTHER_SHELLS = new Set([
  'zsh',
  'fish',
  'csh',
  'tcsh',
  'elvish',
  'nu',
  'xonsh',
  'pwsh',
  'powershell',
  'rc',
  'es',
]);

const STDIN_PATH = /^(?:-|\/dev\/stdin|\/dev\/fd\/\d+|\/proc\/(?:self|\d+|thread-self)\/fd\/\d+)$/;

function readsStdin(context: ProgramContext, what: string, parseShell: boolean): void {
  const { stdin } = context;
  if (parseShell && stdin.kind === 'text' && stdin.literal) {
    context.script(stdin.text, `the script given to ${context.name}`);
    return;
  }
  const from =
    stdin.kind === 'text'
      ? stdin.literal
        ? 'a here-document'
        : 'a here-document that expands'
      : stdin.kind === 'pipe'
        ? 'a pipe'
        : stdin.kind === 'file'
          ? 'a file'
          : 'standard input';
  context.hazard(`${context.name} reading ${what} from ${from}`);
}

const shellSpec: OptionSpec = {
  shortValue: 'oO',
  plus: true,
  long: {
    norc: 'flag',
    noprofile: 'flag',
    login: 'flag',
    posix: 'flag',
    restricted: 'flag',
    verbose: 'flag',
    debugger: 'flag',
    'dump-strings': 'flag',
    'dump-po-strings': 'flag',
    noediting: 'flag',
    protected: 'flag',
    rcfile: 'value',
    'init-file': 'value',
    ...HELP,
  },
  lenientLong: true,
};

const shell: Handler = (context) => {
  const scan = scanOptions(context.words, 1, shellSpec);
  const letters = scan.options
    .filter((option) => /^[-+][a-zA-Z]$/.test(option.name))
    .map((option) => option.name);
  const first = context.words[scan.end];
  if (letters.includes('-c')) {
    // Without a script word, what follows supplies it: xargs's input (`| xargs sh -c`).
    if (first) context.script(first, `the script given to ${context.name} -c`);
    else context.hazard(`${context.name} -c without a script word (what follows it supplies the script)`);
    return;
  }
  if (letters.includes('-i')) {
    context.hazard(`an interactive ${context.name} (it reads commands from its input)`);
    return;
  }
  if (letters.includes('-s') || !first) {
    readsStdin(context, 'its script', true);
    return;
  }
  if (first.processSubstitution || STDIN_PATH.test(first.text)) {
    context.hazard(`${context.name} reading its script from a pipe`);
  }
  // A script file: its commands are not read (see the README).
};

const otherShell: Handler = (context) => {
  const args = context.words.slice(1);
  const script = args.find((word) => !word.text.startsWith('-'));
  const runsCode = args.some((word) => /^-(?:c|command|e|ec|encodedcommand|i|s)$/i.test(word.text));
  if (runsCode || !script || script.processSubstitution || STDIN_PATH.test(script.text)) {
    context.hazard(`${context.name} running commands (its syntax is not bash's, so they cannot be checked)`);
  }
};

interface InterpreterSpec {
  options: OptionSpec;
  /** Options whose value is program text. */
  code: string[];
  /** Options whose value names a module or file to run. */
  file?: string[];
  /** Options that make it read its input as a program after the rest. */
  interactive?: string[];
  /** Options that load native code or configuration the program runs. */
  loads?: string[];
}

const INTERPRETERS: Record<string, InterpreterSpec> = {
  python: {
    options: {
      shortValue: 'cmWX',
      long: { 'check-hash-based-pycs': 'value', ...HELP },
      lenientLong: true,
    },
    code: ['-c'],
    file: ['-m'],
    interactive: ['-i'],
  },
  perl: {
    options: { shortValue: 'eEI', shortOptional: 'ilx0dDCMmFV' },
    code: ['-e', '-E'],
  },
  ruby: {
    options: { shortValue: 'erICEF', shortOptional: 'xW0lK', lenientLong: true },
    code: ['-e'],
  },
  node: {
    options: {
      shortValue: 'eprC',
      long: {
        eval: 'value',
        print: 'value',
        require: 'value',
        import: 'value',
        loader: 'value',
        'experimental-loader': 'value',
        conditions: 'value',
        'input-type': 'value',
        'env-file': 'value',
        title: 'value',
        interactive: 'flag',
        ...HELP,
      },
      lenientLong: true,
    },
    code: ['-e', '--eval', '-p', '--print'],
    interactive: ['-i', '--interactive'],
  },
  php: {
    options: { shortValue: 'rBREfFcdzt', lenientLong: true },
    code: ['-r', '-B', '-R', '-E'],
    file: ['-f', '-F'],
    interactive: ['-a'],
  },
  lua: { options: { shortValue: 'el' }, code: ['-e'], interactive: ['-i'] },
  Rscript: { options: { shortValue: 'e', lenientLong: true }, code: ['-e'] },
  R: {
    options: { shortValue: 'ef', long: { file: 'value', ...HELP }, lenientLong: true },
    code: ['-e'],
    file: ['-f', '--file'],
  },
  julia: { options: { shortValue: 'eEL', lenientLong: true }, code: ['-e', '-E'], file: ['-L'] },
  osascript: { options: { shortValue: 'el' }, code: ['-e'] },
  tclsh: { options: { lenientLong: true }, code: [] },
  wish: { options: { lenientLong: true }, code: [] },
  expect: { options: { shortValue: 'cfD' }, code: ['-c'], file: ['-f'], interactive: ['-i'] },
  jshell: { options: { lenientLong: true }, code: [] },
  irb: { options: { lenientLong: true }, code: [] },
  ghci: { options: { lenientLong: true }, code: ['-e'] },
  deno: { options: { lenientLong: true }, code: [] },
  bun: {
    options: { shortValue: 'ep', long: { eval: 'value', print: 'value' }, lenientLong: true },
    code: ['-e', '-p', '--eval', '--print'],
  },
};

function interpreterSpecFor(name: string): InterpreterSpec | undefined {
  if (/^(?:python|pypy)[0-9.]*$/.test(name)) return INTERPRETERS.python;
  if (/^perl[0-9.]*$/.test(name)) return INTERPRETERS.perl;
  if (/^ruby[0-9.]*$/.test(name)) return INTERPRETERS.ruby;
  if (name === 'node' || name === 'nodejs') return INTERPRETERS.node;
  if (/^php[0-9.]*$/.test(name)) return INTERPRETERS.php;
  if (/^lua(?:jit|[0-9.]*)$/.test(name)) return INTERPRETERS.lua;
  return Object.hasOwn(INTERPRETERS, name) ? INTERPRETERS[name] : undefined;
}

/**
 * An interpreter: literal program text (`python -c '...'`) and script files are not read (the
 * README says so); program text computed at run time or read from standard input is reported.
 */
function interpreter(spec: InterpreterSpec): Handler {
  return (context) => {
    if (context.name === 'deno') {
      const sub = context.words[1]?.text;
      if (sub === 'eval') return;
      if (sub === undefined || sub === 'repl') readsStdin(context, 'its program', false);
      return;
    }
    if (context.name === 'bun') {
      const sub = context.words[1]?.text;
      if (sub === 'x') return context.command(context.words.slice(2));
      if (sub !== undefined && !sub.startsWith('-')) return;
    }
    const scan = scanOptions(context.words, 1, spec.options);
    for (const value of valuesOf(scan, ...spec.code)) {
      if (value.dynamic) context.hazard(`${context.name} running program text computed at run time`);
      else if (context.placeholder !== undefined && value.text.includes(context.placeholder))
        context.hazard(`${context.name} running program text taken from its input (${context.placeholder})`);
    }
    if (context.inputAppended && spec.code.includes(context.words[context.words.length - 1]?.text ?? '')) {
      context.hazard(`${context.name} running program text taken from xargs's input`);
    }
    if (has(scan, ...spec.code)) return;
    if (spec.interactive && has(scan, ...spec.interactive)) {
      context.hazard(`${context.name} reading a program from its input (interactive mode)`);
      return;
    }
    const files = valuesOf(scan, ...(spec.file ?? []));
    const script = files[0] ?? context.words[scan.end];
    if (!script) {
      readsStdin(context, 'its program', false);
      return;
    }
    if (script.processSubstitution || STDIN_PATH.test(script.text)) {
      context.hazard(`${context.name} reading its program from a pipe`);
    }
  };
}

// ---- awk and sed -------------------------------------------------------------------------------

const awkSpec: OptionSpec = {
  shortValue: 'fvFeEilW',
  shortOptional: 'LopdD',
  long: {
    file: 'value',
    assign: 'value',
    'field-separator': 'value',
    source: 'value',
    exec: 'value',
    include: 'value',
    load: 'value',
    sandbox: 'flag',
    lint: 'optional',
    'pretty-print': 'optional',
    profile: 'optional',
    'dump-variables': 'optional',
    debug: 'optional',
    ...HELP,
  },
  lenientLong: true,
};

/** Whether an awk program can run commands: `system()`, pipes to or from commands, `@load`. */
function awkRunsCommands(program: string): boolean {
  let previous = '';
  for (let index = 0; index < program.length; index += 1) {
    const char = program[index]!;
    if (char === '"') {
      for (index += 1; index < program.length && program[index] !== '"'; index += 1) {
        if (program[index] === '\\') index += 1;
      }
      previous = 'operand';
      continue;
    }
    if (char === '#') {
      while (index < program.length && program[index] !== '\n') index += 1;
      continue;
    }
    if (char === '/' && previous !== 'operand') {
      // A regular expression literal (not a division).
      for (index += 1; index < program.length && program[index] !== '/'; index += 1) {
        if (program[index] === '\\') index += 1;
        else if (program[index] === '[') {
          const close = program.indexOf(']', index + 2);
          if (close > 0) index = close;
        }
      }
      previous = 'operand';
      continue;
    }
    if (/[A-Za-z_@]/.test(char)) {
      let end = index + 1;
      while (end < program.length && /[A-Za-z0-9_]/.test(program[end]!)) end += 1;
      const identifier = program.slice(index, end);
      if (identifier === 'system' || identifier === '@load') return true;
      index = end - 1;
      previous = 'operand';
      continue;
    }
    if (char === '|') {
      if (program[index + 1] === '|') {
        index += 1;
        previous = '';
        continue;
      }
      return true;
    }
    if (/[0-9$)\]]/.test(char)) previous = 'operand';
    else if (!/\s/.test(char)) previous = char === '+' || char === '-' ? previous : '';
  }
  return false;
}

const awk: Handler = (context) => {
  const scan = scanOptions(context.words, 1, awkSpec);
  if (has(scan, '-l', '--load')) {
    context.hazard(`${context.name} loading a shared library (-l)`);
    return;
  }
  const sandboxed = has(scan, '--sandbox') || scan.options.some((option) => option.name === '-S');
  for (const file of valuesOf(scan, '-f', '--file', '-E', '--exec', '-i', '--include')) {
    if (file.processSubstitution || STDIN_PATH.test(file.text)) {
      context.hazard(`${context.name} reading its program from standard input`);
    }
  }
  const programs = valuesOf(scan, '-e', '--source');
  if (!has(scan, '-f', '--file', '-E', '--exec', '-e', '--source')) {
    const program = context.words[scan.end];
    if (program) programs.push(program);
  }
  if (sandboxed) return;
  for (const program of programs) {
    if (program.dynamic) context.hazard(`an awk program computed at run time`);
    else if (awkRunsCommands(program.text)) {
      context.hazard(`an awk program that runs commands (system() or a pipe)`);
    }
  }
};

const sedSpec: OptionSpec = {
  shortValue: 'efl',
  shortOptional: 'i',
  shortFlags: 'nrsEzubhV',
  long: {
    expression: 'value',
    file: 'value',
    'in-place': 'optional',
    'line-length': 'value',
    quiet: 'flag',
    silent: 'flag',
    'regexp-extended': 'flag',
    separate: 'flag',
    'null-data': 'flag',
    'zero-terminated': 'flag',
    unbuffered: 'flag',
    binary: 'flag',
    posix: 'flag',
    debug: 'flag',
    sandbox: 'flag',
    'follow-symlinks': 'flag',
    ...HELP,
  },
  permute: true,
};

/**
 * Reads a sed script the way GNU sed does and says whether it can run a command: the `e`
 * command, or the `e` flag of `s`. Anything it cannot read counts as running one.
 */
function sedRunsCommands(script: string): string | undefined {
  let index = 0;
  const length = script.length;
  const skipSpaces = () => {
    while (index < length && (script[index] === ' ' || script[index] === '\t')) index += 1;
  };
  const toEndOfLine = () => {
    while (index < length && script[index] !== '\n') index += 1;
  };
  /** Reads up to an unescaped `delimiter`; false if the script ends first. */
  const readDelimited = (delimiter: string): boolean => {
    while (index < length) {
      const char = script[index]!;
      if (char === '\\') index += 2;
      else if (char === delimiter) {
        index += 1;
        return true;
      } else if (char === '\n' && delimiter !== '\n') return false;
      else index += 1;
    }
    return false;
  };
  const readAddress = (): boolean => {
    const char = script[index];
    if (char === undefined) return false;
    if (/[0-9]/.test(char)) {
      while (index < length && /[0-9~]/.test(script[index]!)) index += 1;
      return true;
    }
    if (char === '$') {
      index += 1;
      return true;
    }
    if (char === '/' || char === '\\') {
      const delimiter = char === '/' ? '/' : script[index + 1];
      index += char === '/' ? 1 : 2;
      if (delimiter === undefined || !readDelimited(delimiter)) return false;
      while (index < length && /[IM]/.test(script[index]!)) index += 1;
      return true;
    }
    return false;
  };
  const unreadable = 'a sed script this policy cannot read';
  while (index < length) {
    while (index < length && /[\s;]/.test(script[index]!)) index += 1;
    if (index >= length) break;
    if (script[index] === '#') {
      toEndOfLine();
      continue;
    }
    if (readAddress()) {
      skipSpaces();
      if (script[index] === ',') {
        index += 1;
        skipSpaces();
        if (script[index] === '+' || script[index] === '~') {
          index += 1;
          while (index < length && /[0-9]/.test(script[index]!)) index += 1;
        } else if (!readAddress()) return unreadable;
      }
    }
    skipSpaces();
    while (script[index] === '!') {
      index += 1;
      skipSpaces();
    }
    const command = script[index];
    index += 1;
    switch (command) {
      case '{':
      case '}':
      case '=':
      case 'd':
      case 'D':
      case 'g':
      case 'G':
      case 'h':
      case 'H':
      case 'n':
      case 'N':
      case 'p':
      case 'P':
      case 'x':
      case 'z':
      case 'F':
        break;
      case 'l':
      case 'L':
      case 'q':
      case 'Q':
        skipSpaces();
        while (index < length && /[0-9]/.test(script[index]!)) index += 1;
        break;
      case ':':
      case 'b':
      case 't':
      case 'T':
      case 'v':
        while (index < length && script[index] !== '\n' && script[index] !== ';') index += 1;
        break;
      case 'a':
      case 'i':
      case 'c':
        // Text to the end of the line; a trailing backslash continues it.
        while (index < length) {
          if (script[index] === '\\') index += 2;
          else if (script[index] === '\n') break;
          else index += 1;
        }
        break;
      case 'r':
      case 'R':
      case 'w':
      case 'W':
        toEndOfLine();
        break;
      case 'e':
        return "sed's e command (it runs a command)";
      case 's': {
        const delimiter = script[index];
        if (delimiter === undefined || delimiter === '\n' || delimiter === '\\') return unreadable;
        index += 1;
        if (!readDelimited(delimiter) || !readDelimited(delimiter)) return unreadable;
        while (index < length && /[gpiImMe0-9w]/.test(script[index]!)) {
          const flag = script[index]!;
          if (flag === 'e') return "the e flag of sed's s command (it runs the result as a command)";
          index += 1;
          if (flag === 'w') {
            toEndOfLine();
            break;
          }
        }
        break;
      }
      case 'y': {
        const delimiter = script[index];
        if (delimiter === undefined || delimiter === '\n' || delimiter === '\\') return unreadable;
        index += 1;
        if (!readDelimited(delimiter) || !readDelimited(delimiter)) return unreadable;
        break;
      }
      default:
        return unreadable;
    }
  }
  return undefined;
}

const sed: Handler = (context) => {
  const scan = scanOptions(context.words, 1, sedSpec);
  if (has(scan, '--sandbox')) return;
  const scripts = valuesOf(scan, '-e', '--expression');
  for (const file of valuesOf(scan, '-f', '--file')) {
    if (file.processSubstitution || STDIN_PATH.test(file.text)) {
      context.hazard('sed reading its script from standard input');
    }
  }
  if (scripts.length === 0 && !has(scan, '-f', '--file')) {
    const first = scan.positionals[0];
    if (first !== undefined) scripts.push(context.words[first]!);
  }
  // Several -e scripts are joined with newlines.
  if (scripts.some((script) => script.dynamic)) {
    context.hazard('a sed script computed at run time');
    return;
  }
  const reason = sedRunsCommands(scripts.map((script) => script.text).join('\n'));
  if (reason) context.hazard(reason);
};

// ---- wrappers with their own syntax --------------------------------------------------------------

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

const xargs: Handler = (context) => {
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

const env: Handler = (context) => {
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

const sudo: Handler = (context) => {
  const scan = scanOptions(context.words, 1, sudoSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  if (has(scan, '-e', '--edit', '-l', '--list', '-v', '--validate', '-k', '-K', '-V')) return;
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
  shortValue: 'cgGsw',
  shortFlags: 'lmpfPhV',
  long: {
    command: 'value',
    'session-command': 'value',
    shell: 'value',
    group: 'value',
    'supp-group': 'value',
    'whitelist-environment': 'value',
    login: 'flag',
    'preserve-environment': 'flag',
    pty: 'flag',
    ...HELP,
  },
  permute: true,
};

const su: Handler = (context) => {
  const words = context.words.map((word) => (word.text === '-' ? { text: '-l', dynamic: false } : word));
  const scan = scanOptions(words, 1, suSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
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

const flock: Handler = (context) => {
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

const script: Handler = (context) => {
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

const watch: Handler = (context) => {
  const scan = scanOptions(context.words, 1, watchSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const rest = context.words.slice(scan.end);
  if (rest.length === 0) return;
  // Without -x, watch joins its arguments and runs them with `sh -c`.
  if (has(scan, '-x', '--exec')) context.command(rest);
  else if (rest.some((word) => word.dynamic)) context.hazard('a command for watch computed at run time');
  else context.script(rest.map((word) => word.text).join(' '), 'the command given to watch');
};

const find: Handler = (context) => {
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

const fd: Handler = (context) => {
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

const parallel: Handler = (context) => {
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

const entr: Handler = (context) => {
  const scan = scanOptions(context.words, 1, { shortFlags: 'acdnprsz' });
  if (scan.unknown) return unknownOption(context, scan.unknown);
  const rest = context.words.slice(scan.end);
  if (rest.length === 0) return;
  if (has(scan, '-s')) context.script(rest[0]!, 'the command given to entr -s');
  else context.command(rest, { placeholder: '/_' });
};

const hyperfine: Handler = (context) => {
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

// ---- programs with options that run commands --------------------------------------------------------

/** Whether `given` (a long option without dashes, before any `=`) abbreviates `full`. */
function abbreviates(given: string, full: string, minimum = 3): boolean {
  return given.length >= minimum && full.startsWith(given);
}

const TAR_COMMAND_OPTIONS = [
  'to-command',
  'use-compress-program',
  'info-script',
  'new-volume-script',
  'checkpoint-action',
  'rsh-command',
  'rmt-command',
];

const tar: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (text === '--') break;
    if (text.startsWith('--')) {
      const given = text.slice(2).split('=')[0]!;
      if (TAR_COMMAND_OPTIONS.some((option) => abbreviates(given, option, given.startsWith('c') ? 11 : 3))) {
        context.hazard(`tar ${text.split('=')[0]} (it runs a command)`);
      }
    } else if (text.startsWith('-') || index === 1) {
      // Short clusters (and the old-style first argument): -I runs a compressor, -F a script.
      if (/[IF]/.test(text.replace(/^-/, ''))) context.hazard('tar -I or -F (it runs a command)');
    }
  }
};

const rg: Handler = (context) => {
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

const zip: Handler = (context) => {
  const { words } = context;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (text === '-TT' || text === '--unzip-command') {
      const value = words[index + 1];
      if (value) context.script(value, 'the test command given to zip');
      index += 1;
    } else if (text.startsWith('--unzip-command=') || (text.startsWith('-TT') && text.length > 3)) {
      context.script(text.replace(/^(?:--unzip-command=|-TT=?)/, ''), 'the test command given to zip');
    }
  }
};

const make: Handler = (context) => {
  const words = context.words;
  for (let index = 1; index < words.length; index += 1) {
    const text = words[index]!.text;
    if (/^(?:--eval(?:=|$)|-E)/.test(text)) {
      context.hazard('make --eval (it reads makefile text from the command line)');
    }
    const file = /^(?:-f|--file|--makefile)$/.test(text)
      ? words[index + 1]
      : /^(?:-f.|--file=|--makefile=)/.test(text)
        ? { text: text.replace(/^(?:-f|--file=|--makefile=)/, ''), dynamic: false }
        : undefined;
    if (file && (('processSubstitution' in file && file.processSubstitution) || STDIN_PATH.test(file.text))) {
      context.hazard('make reading a makefile from standard input');
    }
    const assignment = /^([A-Za-z_.][A-Za-z0-9_.]*)\s*[:+?!]?=(.*)$/s.exec(text);
    if (assignment) {
      const name = assignment[1]!;
      if (['SHELL', '.SHELLFLAGS', 'MAKESHELL', 'MAKEFLAGS', 'MAKEFILES', 'MAKE'].includes(name)) {
        context.hazard(`make ${name}= (it changes what make runs)`);
      } else if (['CC', 'CXX', 'CPP', 'LD', 'AR', 'AS', 'FC'].includes(name)) {
        context.script(assignment[2]!, `the program given to make as ${name}`);
      }
    }
  }
};

/** `--option=PROGRAM` / `--option PROGRAM` (abbreviations included) naming a program to run. */
function programOption(options: readonly string[], minimum: number, kind: 'program' | 'script'): Handler {
  return (context) => {
    const { words } = context;
    for (let index = 1; index < words.length; index += 1) {
      const text = words[index]!.text;
      if (text === '--') return;
      if (!text.startsWith('--')) continue;
      const equals = text.indexOf('=');
      const given = text.slice(2, equals < 0 ? undefined : equals);
      if (!options.some((option) => abbreviates(given, option, minimum))) continue;
      const value =
        equals >= 0 ? { text: text.slice(equals + 1), dynamic: words[index]!.dynamic } : words[index + 1];
      if (!value) continue;
      if (kind === 'program') context.command([value], { stdin: { kind: 'closed' } });
      else context.script(value, `the command given to ${context.name} --${given}`);
    }
  };
}

/** The dynamic loader run as a program: `ld.so [options] PROGRAM args`. */
const loader: Handler = (context) => {
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

const ssh: Handler = (context) => {
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

const scpLike: Handler = (context) => {
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

const rsync: Handler = (context) => {
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

// ---- git ------------------------------------------------------------------------------------------------

const GIT_SUBCOMMANDS = new Set(
  (
    'add am annotate apply archive backfill bisect blame branch bugreport bundle cat-file check-attr ' +
    'check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean ' +
    'clone column commit commit-graph commit-tree config count-objects credential credential-cache ' +
    'credential-store describe diagnose diff diff-files diff-index diff-pairs diff-tree difftool ' +
    'fast-export fast-import fetch fetch-pack fmt-merge-msg for-each-ref for-each-repo format-patch fsck ' +
    'gc get-tar-commit-id grep gui hash-object help http-backend index-pack init interpret-trailers lfs log ' +
    'ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index ' +
    'merge-one-file merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes pack-objects ' +
    'pack-redundant pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase receive-pack ' +
    'reflog refs remote repack replace replay request-pull rerere reset restore rev-list rev-parse revert rm ' +
    'send-pack shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace ' +
    'submodule switch symbolic-ref tag unpack-file unpack-objects update-index update-ref update-server-info ' +
    'upload-archive upload-pack var verify-commit verify-pack verify-tag version whatchanged worktree write-tree'
  ).split(' '),
);

/** Subcommands that run commands from their configuration or arguments in ways not parsed here. */
const GIT_RUNNING_SUBCOMMANDS = new Set([
  'filter-branch',
  'hook',
  'shell',
  'instaweb',
  'web--browse',
  'send-email',
  'daemon',
  'p4',
  'svn',
  'cvsimport',
  'cvsserver',
  'archimport',
  'quiltimport',
]);

/** Configuration keys git only uses as data (who commits, colours, advice, line endings). */
const HARMLESS_GIT_KEYS = new Set([
  'user.name',
  'user.email',
  'user.signingkey',
  'author.name',
  'author.email',
  'committer.name',
  'committer.email',
  'init.defaultbranch',
  'core.autocrlf',
  'core.safecrlf',
  'core.filemode',
  'core.quotepath',
  'core.ignorecase',
  'core.eol',
  'core.whitespace',
  'core.abbrev',
  'commit.gpgsign',
  'tag.gpgsign',
  'pull.rebase',
  'pull.ff',
  'push.default',
  'push.autosetupremote',
  'merge.conflictstyle',
  'merge.ff',
  'diff.renames',
  'diff.algorithm',
  'diff.mnemonicprefix',
  'diff.noprefix',
  'log.date',
  'log.decorate',
  'fetch.prune',
  'rebase.autostash',
  'rebase.autosquash',
  'rerere.enabled',
  'status.short',
  'status.showuntrackedfiles',
  'branch.autosetupmerge',
  'gc.auto',
  'maintenance.auto',
  'safe.directory',
  'core.pager.off',
]);

function isHarmlessGitKey(key: string): boolean {
  const lower = key.toLowerCase();
  if (/^(?:color|advice)\./.test(lower)) return true;
  return HARMLESS_GIT_KEYS.has(lower);
}

const gitGlobalSpec: OptionSpec = {
  shortValue: 'Cc',
  shortFlags: 'pPvh',
  long: {
    'config-env': 'value',
    'exec-path': 'optional',
    'git-dir': 'value',
    'work-tree': 'value',
    namespace: 'value',
    bare: 'flag',
    paginate: 'flag',
    'no-pager': 'flag',
    'no-replace-objects': 'flag',
    'no-lazy-fetch': 'flag',
    'no-optional-locks': 'flag',
    'no-advice': 'flag',
    'literal-pathspecs': 'flag',
    'glob-pathspecs': 'flag',
    'noglob-pathspecs': 'flag',
    'icase-pathspecs': 'flag',
    'list-cmds': 'value',
    'attr-source': 'value',
    'super-prefix': 'value',
    'html-path': 'flag',
    'man-path': 'flag',
    'info-path': 'flag',
    ...HELP,
  },
};

function gitConfigValueHazard(context: ProgramContext, pair: ShellWord | undefined, where: string): void {
  if (!pair) return;
  const key = pair.text.split('=')[0]!;
  if (pair.dynamic || !isHarmlessGitKey(key)) {
    context.hazard(
      `git configuration ${key} given with ${where} (git runs commands named in its configuration)`,
    );
  }
}

const git: Handler = (context) => {
  const { words } = context;
  const scan = scanOptions(words, 1, gitGlobalSpec);
  if (scan.unknown) return unknownOption(context, scan.unknown);
  for (const option of scan.options) {
    if (option.name === '-c') gitConfigValueHazard(context, option.value, 'git -c');
    if (option.name === '--config-env')
      context.hazard('git --config-env (configuration taken from a variable)');
    if (option.name === '--exec-path' && option.value)
      context.hazard('git --exec-path (where git finds its programs)');
    if (option.name === '--git-dir' || option.name === '--bare') {
      context.hazard(`git ${option.name} (a repository whose configuration this policy cannot see)`);
    }
  }
  const subcommandWord = words[scan.end];
  if (!subcommandWord) return;
  const subcommand = subcommandWord.text;
  const args = words.slice(scan.end + 1);
  if (subcommandWord.dynamic) {
    context.hazard('a git subcommand computed at run time');
    return;
  }
  if (GIT_RUNNING_SUBCOMMANDS.has(subcommand)) {
    context.hazard(`git ${subcommand} (it runs commands this policy cannot check)`);
    return;
  }
  if (!GIT_SUBCOMMANDS.has(subcommand)) {
    context.hazard(`git ${subcommand}, which is not a git command (an alias or a git-${subcommand} program)`);
    return;
  }
  const argText = (index: number) => args[index]?.text;
  const commandStrings = (names: string[]) => {
    for (let index = 0; index < args.length; index += 1) {
      const text = args[index]!.text;
      for (const name of names) {
        if (text === name && args[index + 1]) {
          context.script(args[index + 1]!, `the command given to git ${subcommand} ${name}`);
          index += 1;
        } else if (name.startsWith('--') && text.startsWith(`${name}=`)) {
          context.script(text.slice(name.length + 1), `the command given to git ${subcommand} ${name}`);
        } else if (!name.startsWith('--') && text.startsWith(name) && text.length > name.length) {
          context.script(text.slice(name.length), `the command given to git ${subcommand} ${name}`);
        }
      }
    }
  };
  switch (subcommand) {
    case 'config': {
      const options = args.filter((word) => word.text.startsWith('-'));
      const positional = args.filter(
        (word, index) =>
          !word.text.startsWith('-') &&
          !/^(?:-f|--file|--blob|--type|-t|--default|--comment|--value)$/.test(args[index - 1]?.text ?? ''),
      );
      const optionNames = options.map((word) => word.text.split('=')[0]);
      if (optionNames.some((name) => name === '-e' || name === '--edit')) {
        context.hazard('git config --edit (it runs an editor)');
        return;
      }
      const reading = optionNames.some((name) =>
        /^--(?:get|get-all|get-regexp|get-urlmatch|get-color|get-colorbool|list|show-origin|show-scope|name-only|unset|unset-all|remove-section|rename-section)$|^-l$/.test(
          name!,
        ),
      );
      // `git config set KEY VALUE` (new syntax) or `git config KEY VALUE`.
      const verbs = new Set(['get', 'list', 'unset', 'remove-section', 'rename-section', 'edit']);
      if (positional[0] && verbs.has(positional[0].text)) {
        if (positional[0].text === 'edit') context.hazard('git config edit (it runs an editor)');
        return;
      }
      const values = positional[0]?.text === 'set' ? positional.slice(1) : positional;
      if (reading || values.length < 2) return;
      gitConfigValueHazard(context, values[0], 'git config');
      return;
    }
    case 'clone':
    case 'init': {
      for (let index = 0; index < args.length; index += 1) {
        const text = args[index]!.text;
        if (text === '-c' || text === '--config') {
          gitConfigValueHazard(context, args[index + 1], `git ${subcommand} -c`);
          index += 1;
        } else if (text.startsWith('--config=')) {
          gitConfigValueHazard(
            context,
            { text: text.slice(9), dynamic: args[index]!.dynamic },
            `git ${subcommand} -c`,
          );
        } else if (/^--(?:template|separate-git-dir|bare|mirror)(?:=|$)/.test(text)) {
          context.hazard(
            `git ${subcommand} ${text.split('=')[0]} (a repository whose configuration this policy cannot see)`,
          );
        }
      }
      commandStrings(['--upload-pack', '-u']);
      return;
    }
    case 'rebase':
      commandStrings(['--exec', '-x']);
      return;
    case 'difftool':
      commandStrings(['--extcmd', '-x']);
      return;
    case 'grep':
      for (const word of args) {
        const match = /^(?:-O|--open-files-in-pager=)(.+)$/s.exec(word.text);
        if (match) context.script(match[1]!, 'the pager given to git grep -O');
      }
      return;
    case 'fetch':
    case 'pull':
    case 'ls-remote':
    case 'fetch-pack':
    case 'archive':
    case 'push':
    case 'send-pack':
    case 'submodule':
      commandStrings(['--upload-pack', '--receive-pack', '--exec', '-u']);
      if (subcommand === 'submodule') {
        const foreach = args.findIndex((word) => word.text === 'foreach');
        if (foreach >= 0) {
          let start = foreach + 1;
          while (args[start] && /^(?:--recursive|-q|--quiet)$/.test(args[start]!.text)) start += 1;
          const rest = args.slice(start);
          if (rest.some((word) => word.dynamic))
            context.hazard('a command for git submodule foreach computed at run time');
          else if (rest.length > 0) {
            context.script(
              rest.map((word) => word.text).join(' '),
              'the command given to git submodule foreach',
            );
          }
        }
      }
      return;
    case 'bisect':
      if (argText(0) === 'run') context.command(args.slice(1));
      return;
    default:
      return;
  }
};

// ---- package runners and build tools ------------------------------------------------------------------

/** Options of package managers that change which shell, node or editor they run. */
function npmConfigHazard(context: ProgramContext, args: readonly ShellWord[]): boolean {
  for (const word of args) {
    if (
      /^--(?:script-shell|node-options|shell|editor|browser|git|userconfig|globalconfig|call|viewer|node-gyp)(?:=|$)/.test(
        word.text,
      )
    ) {
      context.hazard(`${context.name} ${word.text.split('=')[0]} (it changes what ${context.name} runs)`);
      return true;
    }
  }
  return false;
}

/** `runner [options] command args`: the first word not an option is the command. */
function runCommand(
  context: ProgramContext,
  args: readonly ShellWord[],
  valueOptions: readonly string[],
  shellOptions: readonly string[] = [],
): void {
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index]!;
    const text = word.text;
    if (text === '--') {
      context.command(args.slice(index + 1));
      return;
    }
    if (shellOptions.includes(text)) {
      const value = args[index + 1];
      if (value) context.script(value, `the command given to ${context.name} ${text}`);
      return;
    }
    const equals = text.indexOf('=');
    if (shellOptions.some((option) => text.startsWith(`${option}=`))) {
      context.script(text.slice(equals + 1), `the command given to ${context.name}`);
      return;
    }
    if (text.startsWith('-') && !word.dynamic) {
      if (equals < 0 && valueOptions.includes(text)) index += 1;
      continue;
    }
    context.command(args.slice(index));
    return;
  }
}

const npm: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  const subcommandIndex = args.findIndex((word) => !word.text.startsWith('-'));
  const subcommand = args[subcommandIndex]?.text;
  const rest = args.slice(subcommandIndex + 1);
  if (subcommand === 'exec' || subcommand === 'x') {
    runCommand(context, rest, ['-p', '--package', '-w', '--workspace'], ['-c', '--call']);
  } else if (
    (subcommand === 'config' || subcommand === 'c') &&
    /^(?:set|edit|delete)$/.test(rest[0]?.text ?? '')
  ) {
    context.hazard('npm config (it changes what npm runs)');
  } else if (subcommand === 'set') {
    context.hazard('npm set (it changes what npm runs)');
  }
};

const npx: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  runCommand(context, args, ['-p', '--package', '-w', '--workspace'], ['-c', '--call']);
};

const pnpm: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  const shellMode = args.some((word) => word.text === '-c' || word.text === '--shell-mode');
  const subcommandIndex = args.findIndex(
    (word, index) =>
      !word.text.startsWith('-') &&
      !['-C', '--dir', '--filter', '-F', '--workspace-root'].includes(args[index - 1]?.text ?? ''),
  );
  const subcommand = args[subcommandIndex]?.text;
  const rest = args.slice(subcommandIndex + 1);
  if (subcommand === 'exec' || subcommand === 'dlx') {
    if (shellMode) {
      const command = rest.filter((word) => !word.text.startsWith('-'));
      if (command.some((word) => word.dynamic)) context.hazard('a command for pnpm computed at run time');
      else context.script(command.map((word) => word.text).join(' '), 'the command given to pnpm -c');
    } else {
      runCommand(context, rest, ['--package', '--filter', '-F', '-C', '--dir']);
    }
  } else if (subcommand === 'config' && /^(?:set|delete)$/.test(rest[0]?.text ?? '')) {
    context.hazard('pnpm config (it changes what pnpm runs)');
  }
};

const yarn: Handler = (context) => {
  const args = context.words.slice(1);
  const sub = args[0]?.text;
  if (sub === 'exec' || sub === 'dlx') runCommand(context, args.slice(1), ['-p', '--package']);
  else if (sub === 'config' && /^(?:set|unset)$/.test(args[1]?.text ?? ''))
    context.hazard('yarn config (it changes what yarn runs)');
};

const bunx: Handler = (context) => runCommand(context, context.words.slice(1), ['-p', '--package']);

const uv: Handler = (context) => {
  const args = context.words.slice(1);
  const values = [
    '--with',
    '--with-requirements',
    '--python',
    '-p',
    '--package',
    '--directory',
    '--project',
    '--env-file',
    '--group',
    '--extra',
    '--index',
    '--index-url',
    '--extra-index-url',
    '--from',
    '--config-file',
    '--cache-dir',
  ];
  if (context.name === 'uvx') return runCommand(context, args, values);
  if (args[0]?.text === 'run') return runCommand(context, args.slice(1), values);
  if (args[0]?.text === 'tool' && args[1]?.text === 'run') return runCommand(context, args.slice(2), values);
};

const subcommandRunner =
  (subcommand: string, values: readonly string[]): Handler =>
  (context) => {
    const args = context.words.slice(1);
    const at = args.findIndex((word) => word.text === subcommand);
    if (at >= 0 && args.slice(0, at).every((word) => word.text.startsWith('-'))) {
      runCommand(context, args.slice(at + 1), values);
    }
  };

const cargo: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    if (/^--config(?:=|$)/.test(word.text)) {
      context.hazard('cargo --config (it can name programs cargo runs)');
      return;
    }
  }
};

const go: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    if (/^-{1,2}(?:toolexec|exec)(?:=|$)/.test(word.text)) {
      context.hazard(`go ${word.text.split('=')[0]} (it runs a command)`);
      return;
    }
  }
};

const cmake: Handler = (context) => {
  const args = context.words.slice(1);
  const at = args.findIndex((word) => word.text === '-E');
  if (at >= 0 && args[at + 1]) context.command(args.slice(at + 1));
  if (args.some((word) => word.text === '-P')) context.hazard('cmake -P (it runs a script)');
};

// ---- databases and editors --------------------------------------------------------------------------------

const sqlite: Handler = (context) => {
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
  for (let index = 0; index < args.length; index += 1) {
    const text = args[index]!.text.replace(/^--/, '-');
    if (text.startsWith('-')) {
      if (text === '-cmd' && args[index + 1]) positional.push(args[index + 1]!);
      if (valueOptions.has(text)) index += 1;
      continue;
    }
    positional.push(args[index]!);
  }
  const statements = positional.slice(1);
  if (statements.length === 0) {
    readsStdin(context, 'statements', false);
    return;
  }
  for (const statement of statements) {
    if (statement.dynamic || /(?:^|\n)\s*\./.test(statement.text) || /load_extension/i.test(statement.text)) {
      context.hazard('a sqlite3 dot-command or extension (they can run shell commands)');
      return;
    }
  }
};

const databaseShell: Handler = (context) => {
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
  }
  if (code) {
    if (code.dynamic || /\\!|\\[og]\s*\||\bsystem\b|\bprogram\b/i.test(code.text)) {
      context.hazard(`${context.name} statements that run shell commands`);
    }
    return;
  }
  if (!file) readsStdin(context, 'statements', false);
};

const emacs: Handler = (context) => {
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

const man: Handler = (context) => {
  if (context.words.slice(1).some((word) => /^(?:-P|--pager|-H|--html)/.test(word.text))) {
    context.hazard('man with a pager or browser (it runs a command)');
  }
};

/** Programs that run commands they read from their input or arguments in their own language. */
const ALWAYS_HAZARD: Record<string, string> = {
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
};

// ---- bash builtins --------------------------------------------------------------------------------------

const declareSpec: OptionSpec = { shortFlags: 'aAfFgiIlnprtux', plus: true };

const declaration: Handler = (context) => {
  const scan = scanOptions(context.words, 1, { ...declareSpec, permute: true });
  const letters = new Set(scan.options.map((option) => option.name.slice(1)));
  if (context.name !== 'export' && context.name !== 'readonly') {
    if (scan.options.some((option) => option.name === '-n')) {
      context.hazard(`${context.name} -n (a name reference reads or writes the variable its value names)`);
    }
    if (scan.options.some((option) => option.name === '-i')) {
      context.hazard(`${context.name} -i (later assignments are evaluated as arithmetic)`);
    }
  }
  if (letters.has('f') || letters.has('F') || letters.has('p')) return;
  for (const index of scan.positionals) {
    const word = context.words[index]!;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?=)?/s.exec(word.text);
    if (!match || (word.dynamic && !match[3])) {
      context.variableName(word);
      continue;
    }
    if (match[2]) context.variableName({ text: `${match[1]}${match[2]}`, dynamic: false });
    const value = word.text.slice(match[0].length);
    if (match[3] && value.startsWith('(') && /[$`[]/.test(value)) {
      // `declare 'a=([$(cmd)]=1)'`: bash parses a quoted value that looks like a compound
      // assignment again, expansions included.
      context.hazard(`a compound assignment given to ${context.name} (bash expands its text again)`);
    }
    if (match[3] || isSensitiveVariable(match[1]!, true)) context.assignment(match[1]!, value, true);
  }
};

const read: Handler = (context) => {
  const scan = scanOptions(context.words, 1, { shortValue: 'adinNptu', shortFlags: 'ers' });
  for (const option of scan.options) {
    if (option.name === '-a' && option.value) {
      context.variableName(option.value);
      if (isSensitiveVariable(option.value.text, true)) context.assignment(option.value.text, '', true);
    }
  }
  for (const word of context.words.slice(scan.end)) {
    context.variableName(word);
    if (isSensitiveVariable(word.text, true)) context.assignment(word.text, '', true);
  }
};

const printfBuiltin: Handler = (context) => {
  const first = context.words[1];
  if (!first) return;
  let name: ShellWord | undefined;
  if (first.text === '-v') name = context.words[2];
  else if (first.text.startsWith('-v') && first.text.length > 2)
    name = { text: first.text.slice(2), dynamic: first.dynamic };
  if (!name) return;
  context.variableName(name);
  if (isSensitiveVariable(name.text.replace(/\[.*$/s, ''), true)) context.assignment(name.text, '', true);
};

const namedVariable =
  (position: (words: readonly ShellWord[]) => ShellWord[]): Handler =>
  (context) => {
    for (const word of position(context.words)) {
      context.variableName(word);
      if (isSensitiveVariable(word.text.replace(/\[.*$/s, ''), true)) context.assignment(word.text, '', true);
    }
  };

const mapfile: Handler = (context) => {
  const scan = scanOptions(context.words, 1, { shortValue: 'dnOsuCc', shortFlags: 't' });
  if (has(scan, '-C')) {
    context.hazard(`${context.name} -C (it runs a callback command)`);
    return;
  }
  for (const word of context.words.slice(scan.end)) {
    context.variableName(word);
    if (isSensitiveVariable(word.text, true)) context.assignment(word.text, '', true);
  }
};

const testBuiltin: Handler = (context) => {
  const words = context.words;
  for (let index = 1; index < words.length; index += 1) {
    if (words[index]!.text === '-v' && words[index + 1]) context.variableName(words[index + 1]!);
  }
};

const trap: Handler = (context) => {
  const args = context.words.slice(1).filter((word) => word.text !== '--');
  if (args.length === 0 || /^-[lp]$/.test(args[0]!.text)) return;
  if (args.length === 1 || args[0]!.text === '-' || args[0]!.text === '') return;
  context.hazard('trap (it runs a command later, when a signal or event comes)');
  if (!args[0]!.dynamic) context.script(args[0]!, 'the trap command');
};

const evalBuiltin: Handler = (context) => {
  context.hazard('eval (it runs a string as commands)');
  const args = context.words.slice(1);
  if (args.length > 0 && !args.some((word) => word.dynamic)) {
    context.script(args.map((word) => word.text).join(' '), 'the string given to eval');
  }
};

const BUILTIN_HAZARDS: Record<string, Handler> = {
  eval: evalBuiltin,
  source: (context) =>
    context.hazard("source (it runs the commands of a file; run a virtualenv's programs by path instead)"),
  '.': (context) =>
    context.hazard(". (it runs the commands of a file; run a virtualenv's programs by path instead)"),
  alias: (context) => {
    if (context.words.slice(1).some((word) => word.text.includes('=') || word.dynamic)) {
      context.hazard('an alias definition (an alias can take the name of an allowed command)');
    }
  },
  trap,
  enable: (context) => {
    if (context.words.slice(1).some((word) => /^-[a-zA-Z]*f/.test(word.text))) {
      context.hazard('enable -f (it loads a builtin from a shared library)');
    }
  },
  hash: (context) => {
    if (context.words.slice(1).some((word) => /^-[a-zA-Z]*p/.test(word.text))) {
      context.hazard('hash -p (it makes a command name run another program)');
    }
  },
  mapfile,
  readarray: mapfile,
  compgen: (context) =>
    context.hazard(`${context.name} (its -C, -F and -W options run commands or expand text)`),
  complete: (context) =>
    context.hazard(`${context.name} (its -C, -F and -W options run commands or expand text)`),
  bind: (context) => {
    if (context.words.slice(1).some((word) => /^-[a-zA-Z]*x/.test(word.text))) {
      context.hazard('bind -x (it binds a key to a command)');
    }
  },
  fc: (context) => context.hazard('fc (it runs commands from the history)'),
  declare: declaration,
  typeset: declaration,
  local: declaration,
  export: declaration,
  readonly: declaration,
  read,
  printf: printfBuiltin,
  getopts: namedVariable((words) => (words[2] ? [words[2]] : [])),
  wait: namedVariable((words) => {
    const at = words.findIndex((word) => word.text === '-p');
    return at > 0 && words[at + 1] ? [words[at + 1]!] : [];
  }),
  unset: namedVariable((words) => words.slice(1).filter((word) => !word.text.startsWith('-'))),
  let: (context) => {
    for (const word of context.words.slice(1)) context.arithmetic(word.text);
  },
  test: testBuiltin,
  '[': testBuiltin,
};

// ---- the table ------------------------------------------------------------------------------------------

const HANDLERS: Record<string, Handler> = {
  ...BUILTIN_HAZARDS,
  exec: wrapper({ shortValue: 'a', shortFlags: 'cl' }),
  command: wrapper({ shortFlags: 'pvV' }, { noCommandWith: ['-v', '-V'] }),
  builtin: wrapper({ shortFlags: '' }),
  nohup: wrapper({ shortFlags: '', long: HELP }),
  nice: wrapper({ shortValue: 'n', shortFlags: '', long: { adjustment: 'value', ...HELP }, numeric: true }),
  ionice: wrapper(
    {
      shortValue: 'cnpPu',
      shortFlags: 't',
      long: {
        class: 'value',
        classdata: 'value',
        pid: 'value',
        pgid: 'value',
        uid: 'value',
        ignore: 'flag',
        ...HELP,
      },
    },
    { noCommandWith: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'] },
  ),
  stdbuf: wrapper({
    shortValue: 'ioe',
    shortFlags: '',
    long: { input: 'value', output: 'value', error: 'value', ...HELP },
  }),
  setsid: wrapper({ shortFlags: 'cfw', long: { ctty: 'flag', fork: 'flag', wait: 'flag', ...HELP } }),
  timeout: wrapper(
    {
      shortValue: 'sk',
      shortFlags: 'v',
      long: {
        signal: 'value',
        'kill-after': 'value',
        'preserve-status': 'flag',
        foreground: 'flag',
        verbose: 'flag',
        ...HELP,
      },
    },
    { positional: 1 },
  ),
  time: wrapper({
    shortValue: 'fo',
    shortFlags: 'apqvV',
    long: {
      format: 'value',
      output: 'value',
      append: 'flag',
      portability: 'flag',
      quiet: 'flag',
      verbose: 'flag',
      ...HELP,
    },
  }),
  chroot: wrapper(
    { shortFlags: '', long: { userspec: 'value', groups: 'value', 'skip-chdir': 'flag', ...HELP } },
    { positional: 1, needsCommand: 'chroot starting a shell' },
  ),
  taskset: wrapper(
    { shortFlags: 'acphV', long: { 'all-tasks': 'flag', 'cpu-list': 'flag', pid: 'flag', ...HELP } },
    { positional: 1, noCommandWith: ['-p', '--pid'] },
  ),
  chrt: wrapper(
    { shortValue: 'TPD', shortFlags: 'abdefiomrRpvhV', lenientLong: true },
    { positional: 1, noCommandWith: ['-p', '--pid', '-m', '--max'] },
  ),
  numactl: wrapper({ shortValue: 'imNCpPaw', shortFlags: 'lsHhv', lenientLong: true }),
  prlimit: wrapper(
    { shortValue: 'po', shortOptional: 'cdefilmnqrstuvxyR', lenientLong: true },
    { noCommandWith: ['-p', '--pid'] },
  ),
  unshare: wrapper(
    {
      shortValue: 'SGRwl',
      shortFlags: 'muinpUCTrcfh',
      long: {
        setuid: 'value',
        setgid: 'value',
        root: 'value',
        wd: 'value',
        propagation: 'value',
        setgroups: 'value',
        'map-user': 'value',
        'map-group': 'value',
        'map-users': 'value',
        'map-groups': 'value',
        monotonic: 'value',
        boottime: 'value',
        'load-interp': 'value',
      },
      lenientLong: true,
    },
    { needsCommand: 'unshare starting a shell' },
  ),
  nsenter: wrapper(
    { shortValue: 'tSG', shortOptional: 'rwT', shortFlags: 'amuinpUCFZeh', lenientLong: true },
    { needsCommand: 'nsenter starting a shell' },
  ),
  strace: wrapper(
    { shortValue: 'abeEIoOpPsSuUX', shortFlags: 'cCdDfFhikLnqrtTvVwxyYzZ', lenientLong: true },
    { noCommandWith: ['-p'] },
  ),
  ltrace: wrapper(
    { shortValue: 'aAeEDFlnopsuwxX', shortFlags: 'bcCfhiLrStTV', lenientLong: true },
    { noCommandWith: ['-p'] },
  ),
  valgrind: wrapper({ shortFlags: 'hvqd', lenientLong: true }),
  'xvfb-run': wrapper({
    shortValue: 'efnpsw',
    shortFlags: 'alh',
    long: {
      'auto-servernum': 'flag',
      'error-file': 'value',
      'auth-file': 'value',
      'server-num': 'value',
      'listen-tcp': 'flag',
      'xauth-protocol': 'value',
      'server-args': 'value',
      wait: 'value',
      help: 'flag',
    },
  }),
  'dbus-run-session': wrapper({ shortFlags: '', long: { 'config-file': 'value', ...HELP } }),
  catchsegv: wrapper({ shortFlags: '' }),
  fakeroot: (context) => {
    if (context.words.slice(1).some((word) => /^(?:-l|--lib|--faked)/.test(word.text))) {
      context.hazard('fakeroot loading a library or daemon of its own');
      return;
    }
    wrapper({ shortValue: 'si', shortFlags: 'uhv', long: { 'unknown-is-real': 'flag', ...HELP } })(context);
  },
  faketime: wrapper({ shortValue: 'p', shortFlags: 'mfh' }, { positional: 1 }),
  unbuffer: wrapper({ shortFlags: 'p' }),
  caffeinate: wrapper({ shortValue: 'tw', shortFlags: 'dimsu' }),
  proxychains: wrapper({ shortValue: 'f', shortFlags: 'q' }),
  proxychains4: wrapper({ shortValue: 'f', shortFlags: 'q' }),
  torsocks: wrapper({ shortValue: 'uapP', shortFlags: 'idqhv6', lenientLong: true }),
  tsocks: wrapper({ shortFlags: '' }),
  ccache: wrapper({ shortFlags: '' }),
  doas: wrapper(
    { shortValue: 'uC', shortFlags: 'nsL' },
    { needsCommand: 'doas starting a shell', noCommandWith: ['-C', '-L'] },
  ),
  pkexec: wrapper(
    {
      shortFlags: '',
      long: { user: 'value', 'disable-internal-agent': 'flag', 'keep-cwd': 'flag', ...HELP },
    },
    { needsCommand: 'pkexec starting a shell' },
  ),
  busybox: (context) => {
    const applet = context.words[1];
    if (applet && !applet.text.startsWith('-')) context.command(context.words.slice(1));
  },
  toybox: (context) => {
    const applet = context.words[1];
    if (applet && !applet.text.startsWith('-')) context.command(context.words.slice(1));
  },
  coreutils: (context) => {
    const program = context.words[1]?.text.match(/^--coreutils-prog=(.+)$/s);
    if (program)
      context.command([{ text: program[1]!, dynamic: context.words[1]!.dynamic }, ...context.words.slice(2)]);
  },
  sudo,
  su,
  runuser: su,
  env,
  xargs,
  find,
  fd,
  fdfind: fd,
  flock,
  script,
  watch,
  parallel,
  entr,
  hyperfine,
  sg: (context) => {
    const rest = context.words.slice(2).filter((word) => word.text !== '-c');
    if (rest.length === 0) context.hazard('sg starting a shell');
    else if (rest.some((word) => word.dynamic)) context.hazard('a command for sg computed at run time');
    else context.script(rest.map((word) => word.text).join(' '), 'the command given to sg');
  },
  newgrp: (context) => context.hazard('newgrp starting a shell'),
  awk,
  gawk: awk,
  mawk: awk,
  nawk: awk,
  'original-awk': awk,
  sed,
  gsed: sed,
  git,
  tar,
  gtar: tar,
  bsdtar: tar,
  rg,
  zip,
  make,
  gmake: make,
  ssh,
  scp: scpLike,
  sftp: scpLike,
  rsync,
  npm,
  npx,
  pnpm,
  pnpx: npx,
  yarn,
  bunx,
  uv,
  uvx: uv,
  poetry: subcommandRunner('run', ['-P', '--project', '-C', '--directory']),
  pipenv: subcommandRunner('run', []),
  pdm: subcommandRunner('run', ['-p', '--project']),
  hatch: subcommandRunner('run', ['-e', '--env']),
  pixi: subcommandRunner('run', ['-e', '--environment', '--manifest-path']),
  rye: subcommandRunner('run', []),
  pipx: subcommandRunner('run', ['--spec', '--python']),
  conda: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  mamba: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  micromamba: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  cargo,
  go,
  cmake,
  sort: programOption(['compress-program'], 3, 'program'),
  diff3: programOption(['diff-program'], 3, 'program'),
  sdiff: programOption(['diff-program'], 3, 'program'),
  split: programOption(['filter'], 3, 'script'),
  wget: programOption(['use-askpass'], 5, 'program'),
  sqlite3: sqlite,
  psql: databaseShell,
  mysql: databaseShell,
  mariadb: databaseShell,
  emacs,
  man,
};

const LOADER = /^ld(?:-linux[-\w.]*)?\.so(?:\.\d+)*$|^ld-[\w.-]+\.so(?:\.\d+)*$/;

/** Whether this module knows anything about what `name` runs (else it runs nothing else). */
export function hasProgramKnowledge(name: string): boolean {
  return (
    POSIX_SHELLS.has(name) ||
    OTHER_SHELLS.has(name) ||
    Object.hasOwn(ALWAYS_HAZARD, name) ||
    Object.hasOwn(HANDLERS, name) ||
    LOADER.test(name) ||
    interpreterSpecFor(name) !== undefined
  );
}

/** Looks at what the command's program runs besides itself, and reports it to the context. */
export function resolveProgram(context: ProgramContext): void {
  const { name } = context;
  const always = Object.hasOwn(ALWAYS_HAZARD, name) ? ALWAYS_HAZARD[name] : undefined;
  const handler: Handler | undefined = POSIX_SHELLS.has(name)
    ? shell
    : OTHER_SHELLS.has(name)
      ? otherShell
      : always
        ? (inner) => inner.hazard(always)
        : Object.hasOwn(HANDLERS, name)
          ? HANDLERS[name]
          : LOADER.test(name)
            ? loader
            : undefined;
  if (handler) {
    handler(context);
    return;
  }
  const interpreterSpec = interpreterSpecFor(name);
  if (interpreterSpec) interpreter(interpreterSpec)(context);
}
