// A conservative parser for shell command lines, for the action policy. It finds every simple
// command a line would run — across pipelines, `;`, `&&`, `||`, subshells, `{ }` groups,
// `$(...)`, backticks, process substitution, `bash -c '...'`, `eval`, `find -exec`, `xargs` and
// wrappers such as `env X=1`, `sudo`, `nohup`, `timeout` — with quotes removed and paths reduced
// to the command's basename. Anything whose command name is only known at run time (`$cmd`,
// `$(echo rm)`, globs) is reported as dynamic, so a policy can refuse what it cannot check.
// It does not execute or expand anything.

export interface ShellWord {
  /** The word with quotes and escapes removed (expansions left as written). */
  text: string;
  /** Contains an unquoted glob or any expansion ($VAR, ${...}, $(...), `...`, $((...))). */
  dynamic: boolean;
}

export interface ParsedCommand {
  /** Basename of the command word (`/bin/rm` → `rm`, `\rm` → `rm`). */
  name: string;
  /** Arguments after the command word, quotes removed. */
  args: string[];
  /** The command name is computed at run time; it cannot be checked statically. */
  dynamic: boolean;
  /** The words as written, for messages. */
  source: string;
}

export class ShellParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ShellParseError';
  }
}

const OPERATOR_CHARS = new Set([';', '&', '|', '\n', '(', ')']);
const KEYWORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  '!',
  '{',
  '}',
  'esac',
  'in',
  'function',
  'time',
  'coproc',
]);
const HEADER_KEYWORDS = new Set(['for', 'select', 'case']);
const MAX_DEPTH = 16;

interface RawCommand {
  words: ShellWord[];
}

interface ParseState {
  text: string;
  index: number;
  depth: number;
  /** Every simple command found, nested ones included. */
  out: RawCommand[];
}

function isBlank(char: string | undefined): boolean {
  return char === ' ' || char === '\t' || char === '\r';
}

/** Finds the matching close of `open` starting after it, honouring quotes; returns its index. */
function findClose(text: string, start: number, open: string, close: string): number {
  let depth = 1;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '\\') {
      index += 1;
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) throw new ShellParseError('unterminated single quote');
      index = end;
    } else if (char === '"') {
      index = skipDoubleQuoted(text, index + 1);
    } else if (char === open) {
      depth += 1;
    } else if (char === close) {
      depth -= 1;
      if (depth === 0) return index;
    }
  }
  throw new ShellParseError(`unterminated ${open}`);
}

function skipDoubleQuoted(text: string, start: number): number {
  for (let index = start; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '\\') index += 1;
    else if (char === '"') return index;
    else if (char === '$' && text[index + 1] === '(') index = findClose(text, index + 2, '(', ')');
    else if (char === '`') index = findBacktick(text, index + 1);
  }
  throw new ShellParseError('unterminated double quote');
}

function findBacktick(text: string, start: number): number {
  for (let index = start; index < text.length; index += 1) {
    if (text[index] === '\\') index += 1;
    else if (text[index] === '`') return index;
  }
  throw new ShellParseError('unterminated backtick');
}

function decodeAnsiC(body: string): string {
  return body.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, sequence: string) => {
    if (sequence[0] === 'x') return String.fromCharCode(Number.parseInt(sequence.slice(1), 16));
    if (/^[0-7]/.test(sequence)) return String.fromCharCode(Number.parseInt(sequence, 8));
    const map: Record<string, string> = {
      n: '\n',
      t: '\t',
      r: '\r',
      a: '\x07',
      b: '\b',
      e: '\x1b',
      f: '\f',
      v: '\v',
    };
    return map[sequence] ?? sequence;
  });
}

function nested(state: ParseState, source: string): void {
  if (state.depth >= MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
  const inner: ParseState = { text: source, index: 0, depth: state.depth + 1, out: state.out };
  parseList(inner, undefined);
}

/** Parses only the `$(...)` and backtick substitutions inside a `${...}` body (the rest is data). */
function nestedSubstitutions(state: ParseState, body: string): void {
  for (let index = 0; index < body.length; index += 1) {
    const char = body[index]!;
    if (char === '\\') index += 1;
    else if (char === "'") index = Math.max(index, body.indexOf("'", index + 1));
    else if (char === '$' && body[index + 1] === '(') {
      const close = findClose(body, index + 2, '(', ')');
      if (body[index + 2] !== '(') nested(state, body.slice(index + 2, close));
      index = close;
    } else if (char === '`') {
      const close = findBacktick(body, index + 1);
      nested(state, body.slice(index + 1, close));
      index = close;
    }
  }
}

/** Parses commands until the end of text or an unmatched `terminator`. */
function parseList(state: ParseState, terminator: ')' | undefined): void {
  const { text } = state;
  let words: ShellWord[] = [];
  let word = '';
  let wordDynamic = false;
  let inWord = false;
  let redirectTarget = false;
  let skipHeader = false;
  const heredocs: string[] = [];

  const endWord = () => {
    if (!inWord) return;
    const finished = { text: word, dynamic: wordDynamic };
    word = '';
    wordDynamic = false;
    inWord = false;
    if (redirectTarget) {
      redirectTarget = false;
      return;
    }
    if (skipHeader) return;
    if (words.length === 0 && !finished.dynamic && KEYWORDS.has(finished.text)) return;
    if (words.length === 0 && !finished.dynamic && HEADER_KEYWORDS.has(finished.text)) {
      // `for x in a b; do`, `case $x in`: the header is data, the body follows `do` / `in`.
      skipHeader = true;
      return;
    }
    words.push(finished);
  };
  const endCommand = () => {
    endWord();
    skipHeader = false;
    if (words.length > 0) state.out.push({ words });
    words = [];
  };

  while (state.index < text.length) {
    const char = text[state.index]!;
    const next = text[state.index + 1];

    if (terminator && char === terminator) {
      endCommand();
      return;
    }
    if (char === '#' && !inWord) {
      while (state.index < text.length && text[state.index] !== '\n') state.index += 1;
      continue;
    }
    if (isBlank(char)) {
      endWord();
      state.index += 1;
      continue;
    }
    if (char === '\\') {
      if (next === '\n') {
        state.index += 2;
        continue;
      }
      inWord = true;
      word += next ?? '';
      state.index += 2;
      continue;
    }
    if (char === "'") {
      const end = text.indexOf("'", state.index + 1);
      if (end < 0) throw new ShellParseError('unterminated single quote');
      inWord = true;
      word += text.slice(state.index + 1, end);
      state.index = end + 1;
      continue;
    }
    if (char === '$' && next === "'") {
      let end = state.index + 2;
      while (end < text.length && text[end] !== "'") end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) throw new ShellParseError("unterminated $'...' quote");
      inWord = true;
      word += decodeAnsiC(text.slice(state.index + 2, end));
      state.index = end + 1;
      continue;
    }
    if (char === '"') {
      const end = skipDoubleQuoted(text, state.index + 1);
      const body = text.slice(state.index + 1, end);
      inWord = true;
      // Inside double quotes only $, `, " and \ are special.
      for (let index = 0; index < body.length; index += 1) {
        const inner = body[index]!;
        if (inner === '\\' && index + 1 < body.length && '$`"\\\n'.includes(body[index + 1]!)) {
          if (body[index + 1] !== '\n') word += body[index + 1];
          index += 1;
        } else if (inner === '$' && body[index + 1] === '(') {
          const close = findClose(body, index + 2, '(', ')');
          if (body[index + 2] !== '(') nested(state, body.slice(index + 2, close));
          word += body.slice(index, close + 1);
          wordDynamic = true;
          index = close;
        } else if (inner === '`') {
          const close = findBacktick(body, index + 1);
          nested(state, body.slice(index + 1, close).replace(/\\([`\\$])/g, '$1'));
          word += body.slice(index, close + 1);
          wordDynamic = true;
          index = close;
        } else if (inner === '$' && /[A-Za-z_{0-9@*#?$!-]/.test(body[index + 1] ?? '')) {
          word += inner;
          wordDynamic = true;
        } else {
          word += inner;
        }
      }
      state.index = end + 1;
      continue;
    }
    if (char === '`') {
      const close = findBacktick(text, state.index + 1);
      nested(state, text.slice(state.index + 1, close).replace(/\\([`\\$])/g, '$1'));
      inWord = true;
      wordDynamic = true;
      word += text.slice(state.index, close + 1);
      state.index = close + 1;
      continue;
    }
    if (char === '$' && next === '(') {
      const close = findClose(text, state.index + 2, '(', ')');
      // `$((...))` is arithmetic: no commands, but a computed value.
      if (text[state.index + 2] !== '(') nested(state, text.slice(state.index + 2, close));
      inWord = true;
      wordDynamic = true;
      word += text.slice(state.index, close + 1);
      state.index = close + 1;
      continue;
    }
    if (char === '$' && next === '{') {
      const close = findClose(text, state.index + 2, '{', '}');
      nestedSubstitutions(state, text.slice(state.index + 2, close));
      inWord = true;
      wordDynamic = true;
      word += text.slice(state.index, close + 1);
      state.index = close + 1;
      continue;
    }
    if (char === '$' && next !== undefined && /[A-Za-z_0-9@*#?$!-]/.test(next)) {
      inWord = true;
      wordDynamic = true;
      word += char;
      state.index += 1;
      continue;
    }
    if ((char === '<' || char === '>') && next === '(') {
      endWord();
      const close = findClose(text, state.index + 2, '(', ')');
      nested(state, text.slice(state.index + 2, close));
      state.index = close + 1;
      continue;
    }
    if (char === '<' || char === '>' || (char === '&' && next === '>')) {
      // A redirection: a leading fd number is not a word; the next word is a file, not an argument.
      if (inWord && /^\d+$/.test(word) && !wordDynamic) {
        word = '';
        inWord = false;
      } else {
        endWord();
      }
      let operator = '';
      while (state.index < text.length && '<>&|-'.includes(text[state.index]!)) {
        operator += text[state.index];
        state.index += 1;
        if (operator.length >= 3) break;
      }
      if (operator.startsWith('<<') && !operator.startsWith('<<<')) {
        while (isBlank(text[state.index])) state.index += 1;
        const match = /^(['"]?)([^\s'";&|<>()]+)\1/.exec(text.slice(state.index));
        if (!match) throw new ShellParseError('here-document without a delimiter');
        heredocs.push(match[2]!);
        state.index += match[0].length;
        continue;
      }
      // `>&2`, `2>&1`: the target is an fd, consumed as a word and dropped.
      redirectTarget = true;
      continue;
    }
    if (char === '\n' && heredocs.length > 0) {
      endCommand();
      state.index += 1;
      // Skip here-document bodies: they are data (a policy on `bash` still sees `bash <<EOF`).
      for (const delimiter of heredocs.splice(0)) {
        for (;;) {
          const lineEnd = text.indexOf('\n', state.index);
          const line = text.slice(state.index, lineEnd < 0 ? text.length : lineEnd);
          state.index = lineEnd < 0 ? text.length : lineEnd + 1;
          if (line.replace(/^\t+/, '') === delimiter || lineEnd < 0) break;
        }
      }
      continue;
    }
    if (char === '(' && !inWord) {
      endCommand();
      state.index += 1;
      if (state.depth >= MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
      const inner: ParseState = { text, index: state.index, depth: state.depth + 1, out: state.out };
      parseList(inner, ')');
      if (text[inner.index] !== ')') throw new ShellParseError('unterminated (');
      state.index = inner.index + 1;
      continue;
    }
    if (char === '(' && inWord && next === ')') {
      // A function definition `name()`: the body follows as a group.
      word = '';
      inWord = false;
      words = [];
      state.index += 2;
      continue;
    }
    if (OPERATOR_CHARS.has(char)) {
      if (char === ')') throw new ShellParseError('unmatched )');
      endCommand();
      state.index += 1;
      if ((char === '&' || char === '|' || char === ';') && (next === char || (char === '|' && next === '&')))
        state.index += 1;
      if (char === ';' && next === '&') state.index += 1;
      continue;
    }
    // Unquoted glob characters make a command name unknowable.
    if (char === '*' || char === '?' || char === '[') wordDynamic = wordDynamic || words.length === 0;
    inWord = true;
    word += char;
    state.index += 1;
  }
  if (terminator) throw new ShellParseError(`unterminated ${terminator === ')' ? '(' : terminator}`);
  if (heredocs.length > 0) {
    // Here-document bodies that never started: nothing left to skip.
  }
  endCommand();
}

/** Splits a line into its simple commands (as words), nested substitutions included. */
export function parseSimpleCommands(line: string): ShellWord[][] {
  const state: ParseState = { text: line, index: 0, depth: 0, out: [] };
  parseList(state, undefined);
  return state.out.map((command) => command.words);
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'mksh', 'busybox-sh']);

function basename(name: string): string {
  const trimmed = name.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1) || name;
}

/** Options of wrapper commands that take a value (the next word is not the command). */
const WRAPPERS: Record<string, { valueOptions: Set<string>; positional?: number }> = {
  sudo: {
    valueOptions: new Set([
      '-u',
      '-g',
      '-h',
      '-p',
      '-C',
      '-r',
      '-t',
      '-U',
      '-D',
      '-R',
      '-T',
      '--user',
      '--group',
      '--host',
      '--prompt',
      '--chdir',
    ]),
  },
  doas: { valueOptions: new Set(['-u', '-C']) },
  env: { valueOptions: new Set(['-u', '-C', '--unset', '--chdir']) },
  nohup: { valueOptions: new Set() },
  nice: { valueOptions: new Set(['-n', '--adjustment']) },
  ionice: { valueOptions: new Set(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata']) },
  stdbuf: { valueOptions: new Set(['-i', '-o', '-e']) },
  setsid: { valueOptions: new Set() },
  exec: { valueOptions: new Set(['-a']) },
  command: { valueOptions: new Set() },
  builtin: { valueOptions: new Set() },
  time: { valueOptions: new Set(['-f', '-o', '--format', '--output']) },
  timeout: { valueOptions: new Set(['-s', '-k', '--signal', '--kill-after']), positional: 1 },
  chroot: { valueOptions: new Set(['--userspec', '--groups']), positional: 1 },
  xargs: {
    valueOptions: new Set([
      '-I',
      '-i',
      '-n',
      '-P',
      '-L',
      '-l',
      '-s',
      '-d',
      '-E',
      '-e',
      '-a',
      '--max-args',
      '--max-procs',
      '--delimiter',
      '--arg-file',
      '--replace',
    ]),
  },
  watch: { valueOptions: new Set(['-n', '-d', '--interval']) },
  strace: { valueOptions: new Set(['-o', '-e', '-p', '-s', '-u', '-E']) },
  ltrace: { valueOptions: new Set(['-o', '-e', '-p', '-s', '-u']) },
  busybox: { valueOptions: new Set() },
  flock: { valueOptions: new Set(['-w', '-E', '--timeout', '--conflict-exit-code']), positional: 1 },
  unbuffer: { valueOptions: new Set() },
  caffeinate: { valueOptions: new Set() },
  proxychains: { valueOptions: new Set(['-f']) },
  torsocks: { valueOptions: new Set() },
  'run-parts': { valueOptions: new Set() },
};

/**
 * Resolves a line to every command it would run: wrapper chains (`sudo env X=1 /bin/rm`) yield
 * each wrapper and the wrapped command; `sh -c STRING` and `eval` are parsed recursively.
 */
export function parseCommandLine(line: string, depth = 0): ParsedCommand[] {
  if (depth > MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
  const result: ParsedCommand[] = [];
  for (const words of parseSimpleCommands(line)) resolveWords(words, result, depth);
  return result;
}

function resolveWords(input: ShellWord[], out: ParsedCommand[], depth: number): void {
  let words = input;
  // Leading assignments (`X=1 cmd`) are not the command.
  while (words.length > 0 && ASSIGNMENT.test(words[0]!.text)) words = words.slice(1);
  if (words.length === 0) return;
  const first = words[0]!;
  const name = basename(first.text);
  const args = words.slice(1).map((word) => word.text);
  out.push({ name, args, dynamic: first.dynamic, source: words.map((word) => word.text).join(' ') });
  if (first.dynamic) return;

  if (SHELLS.has(name) || (name === 'busybox' && SHELLS.has(words[1]?.text ?? ''))) {
    const dashC = words.findIndex((word, index) => index > 0 && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(word.text));
    if (dashC > 0) {
      const script = words[dashC + 1];
      if (script) {
        if (script.dynamic) out.push({ name: script.text, args: [], dynamic: true, source: script.text });
        else for (const command of parseCommandLine(script.text, depth + 1)) out.push(command);
      }
    }
    return;
  }
  if (name === 'eval') {
    const rest = words.slice(1);
    if (rest.some((word) => word.dynamic)) {
      out.push({
        name: rest.map((word) => word.text).join(' '),
        args: [],
        dynamic: true,
        source: rest.map((word) => word.text).join(' '),
      });
      return;
    }
    for (const command of parseCommandLine(rest.map((word) => word.text).join(' '), depth + 1))
      out.push(command);
    return;
  }
  if (name === 'find') {
    for (let index = 1; index < words.length; index += 1) {
      if (['-exec', '-execdir', '-ok', '-okdir'].includes(words[index]!.text)) {
        const end = words.findIndex((word, at) => at > index && (word.text === ';' || word.text === '+'));
        resolveWords(words.slice(index + 1, end < 0 ? words.length : end), out, depth);
      }
    }
    return;
  }
  const wrapper = WRAPPERS[name];
  if (!wrapper) return;
  if (
    (name === 'command' || name === 'builtin') &&
    words.slice(1).some((word) => word.text === '-v' || word.text === '-V')
  )
    return;
  let index = 1;
  let positional = wrapper.positional ?? 0;
  while (index < words.length) {
    const word = words[index]!;
    const text = word.text;
    if (text === '--') {
      index += 1;
      break;
    }
    if (name === 'env' && ASSIGNMENT.test(text)) {
      index += 1;
      continue;
    }
    if (name === 'env' && (text === '-S' || text === '--split-string' || text.startsWith('-S'))) {
      // `env -S 'cmd args'` splits its argument into a command line.
      const script = text === '-S' || text === '--split-string' ? words[index + 1]?.text : text.slice(2);
      if (script !== undefined) for (const command of parseCommandLine(script, depth + 1)) out.push(command);
      return;
    }
    if (text.startsWith('-') && text.length > 1) {
      const option = text.includes('=') ? text.slice(0, text.indexOf('=')) : text;
      index += wrapper.valueOptions.has(option) && !text.includes('=') ? 2 : 1;
      continue;
    }
    if (positional > 0) {
      positional -= 1;
      index += 1;
      continue;
    }
    break;
  }
  if (index < words.length) resolveWords(words.slice(index), out, depth);
}
