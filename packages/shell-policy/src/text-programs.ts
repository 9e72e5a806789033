// awk and sed, read the way they read their programs: `system()`, pipes and `@load` in awk,
// the `e` command and the `e` flag of `s` in sed run commands.

import { type Handler, HELP, has, type OptionSpec, scanOptions, valuesOf } from './options.js';
import { STDIN_PATH } from './shells.js';

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

export const awk: Handler = (context) => {
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

export const sed: Handler = (context) => {
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
