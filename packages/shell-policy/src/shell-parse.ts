// A conservative reader of bash command lines, for the action policy. It finds every simple
// command a line would run — across pipelines, lists, subshells, `{ }` groups, compound commands
// (`if`/`for`/`while`/`case`/`[[ ]]`), `$(...)`, backticks, process substitution, here-document
// bodies that expand, `bash -c '...'`, `find -exec`, `xargs` and the wrappers and command-running
// options of common programs (shell-parse-programs.ts) — with quotes removed and paths reduced to
// the command's basename. It never executes or expands anything.
//
// What it cannot see into is reported, never guessed: a command name computed at run time
// (`$cmd`, globs, brace expansion) is `dynamic`, and constructs that can run code the line does not
// show — arithmetic on variables (bash evaluates a variable's value as an expression, and an array
// subscript in it runs command substitutions), `${x@P}`, indirect expansion, `eval`, `source`,
// aliases, traps, function definitions, coprocesses, assignments to variables that change how
// later programs behave, a shell or interpreter reading its program from standard input — are
// reported as hazards (`dynamic: true` entries with a `reason`). The policy refuses both unless
// told otherwise.
//
// Hand-written on purpose: the published bash parsers for JavaScript are either lossy or slow
// (sh-syntax strips node types and takes ~9 ms per line; the GopherJS build of mvdan/sh takes
// ~0.7 ms per line and ~240 ms to load, measured here), and the policy needs bash's own rules for
// where code runs (arithmetic, here-documents, ANSI-C quotes), which an AST alone does not give.
import { ShearsError } from '@shears/core';
import {
  configPathHazard,
  isSensitiveVariable,
  isSpecialBuiltin,
  outputPathHazard,
  variableRisk,
  writtenFiles,
} from './shell-parse-environment.js';
import { hasProgramKnowledge, resolveProgram } from './shell-parse-programs.js';
import type { ParsedCommand, ProgramContext, ShellWord, StdinSource } from './types.js';

export class ShellParseError extends ShearsError {
  constructor(message: string) {
    super(message, { code: 'SHEARS_SHELL_PARSE' });
  }
}

/** A redirection of one command. */
interface Redirect {
  op: string;
  /** The explicit file descriptor (`2>`), if any. */
  fd: string | undefined;
  target: ShellWord | undefined;
  /** A here-document's body, filled in when the parser reaches it. */
  heredoc?: { body: string; expands: boolean };
}

/** One simple command as the grammar sees it (before programs are resolved). */
interface SimpleCommand {
  assignments: ShellWord[];
  words: ShellWord[];
  redirects: Redirect[];
  /** Standard input is the previous command of a pipeline. */
  piped: boolean;
}

interface PendingHeredoc {
  redirect: Redirect;
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
}

interface Sink {
  commands: SimpleCommand[];
  hazards: { reason: string; source: string; order: number }[];
  /** Order of every entry, so hazards and commands keep their places in the line. */
  order: number;
}

const MAX_DEPTH = 16;
const METACHARACTERS = new Set([' ', '\t', '\r', '\n', ';', '&', '|', '<', '>', '(', ')']);
/** Reserved words that only open or close structure: what follows is a command. */
const STRUCTURE_WORDS = new Set([
  '!',
  '{',
  '}',
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'do',
  'done',
  'while',
  'until',
  'esac',
]);
const ARITHMETIC_COMPARISONS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/;

function isBlank(char: string | undefined): boolean {
  return char === ' ' || char === '\t' || char === '\r';
}

/** An arithmetic operand that is a number written out (no variable whose value bash evaluates). */
function isLiteralNumber(text: string): boolean {
  return /^\s*[-+]?\s*(?:0[xX][0-9a-fA-F]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+)\s*$/.test(text);
}

const ARITHMETIC_REASON =
  'arithmetic on a variable or a command output (bash evaluates such a value as an expression, and an array subscript in it runs commands)';

/** Decodes the body of `$'...'`. */
function decodeAnsiC(body: string): string {
  return body
    .replace(
      /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
      (_, sequence: string) => {
        const kind = sequence[0]!;
        if (kind === 'x' || kind === 'u' || kind === 'U') {
          return String.fromCodePoint(Number.parseInt(sequence.slice(1), 16));
        }
        if (/^[0-7]/.test(sequence)) return String.fromCharCode(Number.parseInt(sequence, 8) & 0xff);
        if (kind === 'c') return String.fromCharCode(sequence.charCodeAt(1) & 0x1f);
        const map: Record<string, string> = {
          n: '\n',
          t: '\t',
          r: '\r',
          a: '\x07',
          b: '\b',
          e: '\x1b',
          E: '\x1b',
          f: '\f',
          v: '\v',
        };
        return map[kind] ?? kind;
      },
    )
    .replace(/\0[\s\S]*$/, ''); // bash ends the string at a NUL
}

/** Whether unquoted text holds a brace expansion `{a,b}` / `{1..3}` (linear: no regex backtracking). */
function hasBraceExpansion(text: string): boolean {
  let open = false;
  let separated = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (char === '{') {
      open = true;
      separated = false;
    } else if (!open) {
    } else if (char === ',' || (char === '.' && text[index + 1] === '.')) {
      separated = true;
    } else if (char === '}') {
      if (separated) return true;
      open = false;
    }
  }
  return false;
}

/** Finds the `)` closing a `(` opened just before `start`, honouring quotes; returns its index. */
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
    } else if (char === '`') {
      index = findBacktick(text, index + 1);
    } else if (char === '$' && text[index + 1] === '(' && open !== '(') {
      index = findClose(text, index + 2, '(', ')');
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
    else if (char === '$' && text[index + 1] === '{') index = findClose(text, index + 2, '{', '}');
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

/** The end of `$((...))` / `((...))` starting after the two parentheses, or -1 if it is not one. */
function findArithmeticEnd(text: string, start: number): number {
  let depth = 0;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '\\') index += 1;
    else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) return -1;
      index = end;
    } else if (char === '"') index = skipDoubleQuoted(text, index + 1);
    else if (char === '`') index = findBacktick(text, index + 1);
    else if (char === '$' && text[index + 1] === '(') {
      if (text[index + 2] === '(') {
        const end = findArithmeticEnd(text, index + 3);
        index = end < 0 ? findClose(text, index + 2, '(', ')') : end + 1;
      } else {
        index = findClose(text, index + 2, '(', ')');
      }
    } else if (char === '$' && text[index + 1] === '{') index = findClose(text, index + 2, '{', '}');
    else if (char === '(') depth += 1;
    else if (char === ')') {
      if (depth === 0) return text[index + 1] === ')' ? index : -1;
      depth -= 1;
    }
  }
  return -1;
}

class Parser {
  index = 0;
  private readonly pending: PendingHeredoc[] = [];

  constructor(
    private readonly text: string,
    private readonly depth: number,
    private readonly sink: Sink,
  ) {
    if (depth > MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
  }

  hazard(reason: string, source: string): void {
    this.sink.hazards.push({ reason, source, order: this.sink.order++ });
  }

  /** Parses a nested command list (a substitution's body, a here-string given to a shell). */
  nested(source: string): void {
    const parser = new Parser(source, this.depth + 1, this.sink);
    parser.parseList(undefined);
    parser.finish();
  }

  /**
   * Parses the command substitution (or process substitution) whose body starts at `start` in
   * `text`, with the full grammar (comments, here-documents and `case` patterns may hold `)`);
   * returns the index of its closing `)`.
   */
  substitution(text: string, start: number): number {
    const parser = new Parser(text, this.depth + 1, this.sink);
    parser.index = start;
    parser.parseList(')');
    parser.finish();
    return parser.index;
  }

  /** The index of the `}` closing a `${` whose body starts at `start`. */
  parameterEnd(text: string, start: number): number {
    for (let index = start; index < text.length; ) {
      const char = text[index]!;
      const next = text[index + 1];
      if (char === '}') return index;
      if (char === '\\') index += 2;
      else if (char === "'") {
        const end = text.indexOf("'", index + 1);
        if (end < 0) throw new ShellParseError('unterminated single quote');
        index = end + 1;
      } else if (char === '"') index = this.dry().readDoubleQuoted(text, index).end;
      else if (char === '`') index = findBacktick(text, index + 1) + 1;
      else if (char === '$' && next === '{') index = this.parameterEnd(text, index + 2) + 1;
      else if (char === '$' && next === '(') {
        const arithmetic = text[index + 2] === '(' ? findArithmeticEnd(text, index + 3) : -1;
        index = arithmetic >= 0 ? arithmetic + 2 : this.dry().substitution(text, index + 2) + 1;
      } else index += 1;
    }
    throw new ShellParseError('unterminated ${');
  }

  /** A parser whose findings are thrown away: it only finds where nested constructs end. */
  private dry(): Parser {
    return new Parser(this.text, this.depth + 1, { commands: [], hazards: [], order: 0 });
  }

  finish(): void {
    // Here-documents whose body never started (no newline after the command) are empty.
    for (const pending of this.pending.splice(0)) pending.redirect.heredoc = { body: '', expands: false };
  }

  // ---- words ---------------------------------------------------------------------------

  /**
   * Scans text in which `$` and backticks expand (a double-quoted string, an unquoted
   * here-document body, a parameter expansion's word) for command substitutions and hazards.
   */
  scanExpansions(body: string): boolean {
    let found = false;
    for (let index = 0; index < body.length; index += 1) {
      const char = body[index]!;
      if (char === '\\') {
        index += 1;
      } else if (char === '`') {
        const close = findBacktick(body, index + 1);
        this.nested(body.slice(index + 1, close).replace(/\\([`\\$])/g, '$1'));
        found = true;
        index = close;
      } else if (char === '$') {
        const end = this.readDollar(body, index, true);
        if (end > index + 1) found = true;
        index = end - 1;
      }
    }
    return found;
  }

  /**
   * Reads one `$` construct starting at `start` (`$(...)`, `$((...))`, `${...}`, `$[...]`,
   * `$name`, `$1`, `$?`); nested commands and hazards go to the sink. Returns the index after it
   * (start + 1 when the `$` is literal).
   */
  readDollar(text: string, start: number, inQuotes: boolean): number {
    const next = text[start + 1];
    if (next === '(') {
      if (text[start + 2] === '(') {
        const end = findArithmeticEnd(text, start + 3);
        if (end >= 0) {
          this.checkArithmetic(text.slice(start + 3, end), text.slice(start, end + 2));
          return end + 2;
        }
      }
      return this.substitution(text, start + 2) + 1;
    }
    if (next === '[') {
      const close = findClose(text, start + 2, '[', ']');
      this.checkArithmetic(text.slice(start + 2, close), text.slice(start, close + 1));
      return close + 1;
    }
    if (next === '{') {
      const close = this.parameterEnd(text, start + 2);
      this.checkParameter(text.slice(start + 2, close), text.slice(start, close + 1));
      return close + 1;
    }
    if (next !== undefined && /[A-Za-z_]/.test(next)) {
      let end = start + 1;
      while (end < text.length && /[A-Za-z0-9_]/.test(text[end]!)) end += 1;
      return end;
    }
    if (next !== undefined && /[0-9@*#?$!-]/.test(next)) return start + 2;
    if (!inQuotes && (next === "'" || next === '"')) return start + 1;
    return start + 1;
  }

  /** Arithmetic text (`$((…))`, `((…))`, `$[…]`, a subscript, a `[[ -eq ]]` operand). */
  checkArithmetic(expression: string, source: string): void {
    this.scanExpansions(expression);
    // `$#`, `$?`, `$$`, `$!` are numbers; any other expansion or a bare name is a value that
    // bash evaluates as an expression in its turn.
    const rest = expression
      .replace(/\$[#?$!]/g, ' 0 ')
      .replace(/\b0[xX][0-9a-fA-F]+\b/g, ' 0 ')
      .replace(/\b[0-9]+#[0-9A-Za-z@_]+/g, ' 0 ');
    if (/[A-Za-z_$`]/.test(rest)) this.hazard(ARITHMETIC_REASON, source);
  }

  /** Checks the body of `${...}`. */
  checkParameter(body: string, source: string): void {
    // bash 5.3 runs `${ command; }` and `${| command; }` in the current shell.
    if (/^[\s|]/.test(body)) {
      this.nested(body.replace(/^\|/, ''));
      return;
    }
    let index = 0;
    let indirect = false;
    if (body[0] === '#' && body.length > 1 && !/^#[-=?+:]/.test(body) && body !== '#') index = 1;
    else if (body[0] === '!' && body.length > 1) {
      indirect = true;
      index = 1;
    }
    const nameMatch = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(body.slice(index));
    if (!nameMatch) {
      // Not a parameter bash accepts ("bad substitution"): nothing runs, but look anyway.
      this.scanExpansions(body);
      return;
    }
    const name = nameMatch[0];
    index += name.length;
    if (body[index] === '[') {
      const close = findClose(body, index + 1, '[', ']');
      const subscript = body.slice(index + 1, close);
      if (subscript !== '@' && subscript !== '*') this.checkSubscript(subscript, source);
      index = close + 1;
    }
    const operator = body.slice(index);
    if (indirect) {
      // `${!prefix*}`, `${!prefix@}` and `${!array[@]}` list names; any other `${!x}` reads the
      // variable named by x's value, subscript (and its command substitutions) included.
      if (!(operator === '*' || operator === '@' || (operator === '' && /\[[@*]\]$/.test(body)))) {
        this.hazard(
          'an indirect expansion ${!name} (the name it reads may carry a subscript that runs commands)',
          source,
        );
      }
    }
    if (operator === '') return;
    if (operator.startsWith('@')) {
      if (operator.slice(1) === 'P') {
        this.hazard(
          'the prompt expansion ${name@P} (it runs command substitutions found in the value)',
          source,
        );
      }
      return;
    }
    if (/^:?[-=?+]/.test(operator)) {
      if (/^:?=/.test(operator) && isSensitiveVariable(name, true)) {
        this.hazard(`an assignment to ${name} (it changes how later programs behave)`, source);
      }
      this.scanExpansions(operator.replace(/^:?[-=?+]/, ''));
      return;
    }
    if (operator.startsWith(':')) {
      // `${x:offset:length}`: both are arithmetic.
      for (const part of operator.slice(1).split(':')) {
        if (part.trim() !== '') this.checkArithmetic(part, source);
      }
      return;
    }
    this.scanExpansions(operator);
  }

  /** An indexed array's subscript is arithmetic (an associative array's is a plain word). */
  checkSubscript(subscript: string, source: string): void {
    if (isLiteralNumber(subscript)) return;
    this.scanExpansions(subscript);
    this.hazard(`an array subscript that is not a number (${ARITHMETIC_REASON})`, source);
  }

  /** Reads `'...'` at `start`; returns the index after the closing quote. */
  private singleQuoted(start: number): { text: string; end: number } {
    const end = this.text.indexOf("'", start + 1);
    if (end < 0) throw new ShellParseError('unterminated single quote');
    return { text: this.text.slice(start + 1, end), end: end + 1 };
  }

  /** Reads `"..."` at `start` in `text`; returns its text (expansions kept) and whether it expands. */
  readDoubleQuoted(text: string, start: number): { text: string; end: number; dynamic: boolean } {
    let out = '';
    let dynamic = false;
    let index = start + 1;
    for (;;) {
      if (index >= text.length) throw new ShellParseError('unterminated double quote');
      const char = text[index]!;
      const next = text[index + 1];
      if (char === '"') return { text: out, end: index + 1, dynamic };
      if (char === '\\' && next !== undefined && '$`"\\\n'.includes(next)) {
        if (next !== '\n') out += next;
        index += 2;
      } else if (char === '`') {
        const end = findBacktick(text, index + 1);
        this.nested(text.slice(index + 1, end).replace(/\\([`\\$])/g, '$1'));
        out += text.slice(index, end + 1);
        dynamic = true;
        index = end + 1;
      } else if (char === '$') {
        const end = this.readDollar(text, index, true);
        if (end > index + 1) dynamic = true;
        out += text.slice(index, end);
        index = end;
      } else {
        out += char;
        index += 1;
      }
    }
  }

  /** Reads a parenthesised group inside a word (an extglob pattern or a compound assignment). */
  private parenthesised(start: number): { body: string; end: number } {
    const close = findClose(this.text, start + 1, '(', ')');
    return { body: this.text.slice(start + 1, close), end: close + 1 };
  }

  /**
   * Reads one word at the current position. `regex` is for the right side of `=~` in `[[ ]]`,
   * where parentheses and `|` belong to the word.
   */
  readWord(regex = false): ShellWord {
    const { text } = this;
    const start = this.index;
    let word = '';
    // Unquoted characters only (quoted parts and expansions become \u0001): for globs and braces.
    let skeleton = '';
    let dynamic = false;
    let quoted = false;
    let processSubstitution = false;
    let regexDepth = 0;
    while (this.index < text.length) {
      const char = text[this.index]!;
      const next = text[this.index + 1];
      if (regex && (char === '(' || (regexDepth > 0 && char === ')'))) {
        regexDepth += char === '(' ? 1 : -1;
        word += char;
        skeleton += char;
        this.index += 1;
        continue;
      }
      if (regex && (char === '|' || ((char === ' ' || char === '\t') && regexDepth > 0))) {
        word += char;
        skeleton += char;
        this.index += 1;
        continue;
      }
      if ((char === '<' || char === '>') && next === '(' && this.index === start) {
        // Process substitution: the program gets a /dev/fd path to the command's output/input.
        const close = this.substitution(text, this.index + 2);
        const group = { end: close + 1 };
        word += text.slice(this.index, group.end);
        skeleton += '\u0001';
        dynamic = true;
        processSubstitution = true;
        this.index = group.end;
        continue;
      }
      if (char === '(' && /[?*+@!]$/.test(skeleton) && skeleton.length > 0) {
        // An extglob pattern `@(...)`: a glob, with expansions inside.
        const group = this.parenthesised(this.index);
        this.scanExpansions(group.body);
        word += text.slice(this.index, group.end);
        skeleton += '*';
        dynamic = true;
        this.index = group.end;
        continue;
      }
      if (char === '(' && ASSIGNMENT.test(word) && word.endsWith('=') && skeleton.length === word.length) {
        // A compound array assignment `name=(...)`: elements may carry `[subscript]=`.
        const group = this.parenthesised(this.index);
        this.scanExpansions(group.body);
        for (const match of group.body.matchAll(/(?:^|[\s(])\[([^\]]*)\]\+?=/g)) {
          this.checkSubscript(match[1]!, text.slice(start, group.end));
        }
        word += text.slice(this.index, group.end);
        this.index = group.end;
        continue;
      }
      if (METACHARACTERS.has(char)) break;
      if (char === '\\') {
        if (next === '\n') {
          this.index += 2;
          continue;
        }
        word += next ?? '';
        skeleton += '\u0001';
        quoted = true;
        this.index += 2;
        continue;
      }
      if (char === "'") {
        const part = this.singleQuoted(this.index);
        word += part.text;
        skeleton += '\u0001';
        quoted = true;
        this.index = part.end;
        continue;
      }
      if (char === '$' && next === "'") {
        let end = this.index + 2;
        while (end < text.length && text[end] !== "'") end += text[end] === '\\' ? 2 : 1;
        if (end >= text.length) throw new ShellParseError("unterminated $'...' quote");
        word += decodeAnsiC(text.slice(this.index + 2, end));
        skeleton += '\u0001';
        quoted = true;
        this.index = end + 1;
        continue;
      }
      if (char === '"' || (char === '$' && next === '"')) {
        // `$"..."` is a translatable string: a double-quoted string for our purposes.
        const part = this.readDoubleQuoted(text, char === '$' ? this.index + 1 : this.index);
        word += part.text;
        skeleton += '\u0001';
        quoted = true;
        dynamic = dynamic || part.dynamic;
        this.index = part.end;
        continue;
      }
      if (char === '`') {
        const close = findBacktick(text, this.index + 1);
        this.nested(text.slice(this.index + 1, close).replace(/\\([`\\$])/g, '$1'));
        word += text.slice(this.index, close + 1);
        skeleton += '\u0001';
        dynamic = true;
        this.index = close + 1;
        continue;
      }
      if (char === '$') {
        const end = this.readDollar(text, this.index, false);
        word += text.slice(this.index, end);
        if (end > this.index + 1) {
          skeleton += '\u0001';
          dynamic = true;
        } else {
          skeleton += '$';
        }
        this.index = end;
        continue;
      }
      word += char;
      skeleton += char;
      this.index += 1;
    }
    if (!regex) {
      const bracket = skeleton.indexOf('[');
      if (/[*?]/.test(skeleton) || (bracket >= 0 && skeleton.indexOf(']', bracket + 1) > 0)) dynamic = true;
      if (skeleton.includes('{') && hasBraceExpansion(skeleton)) dynamic = true;
    }
    return {
      text: word,
      dynamic,
      ...(quoted ? { quoted: true } : {}),
      ...(processSubstitution ? { processSubstitution: true } : {}),
    };
  }

  // ---- structure -------------------------------------------------------------------------

  private skipBlanks(): void {
    while (isBlank(this.text[this.index])) this.index += 1;
  }

  /** After a word: is the next character the end of a token? */
  private atDelimiter(position: number): boolean {
    const char = this.text[position];
    return char === undefined || METACHARACTERS.has(char);
  }

  /** Peeks at the next word without consuming it (for reserved words like `esac`, `in`). */
  private peekReserved(word: string): boolean {
    if (!this.text.startsWith(word, this.index)) return false;
    return this.atDelimiter(this.index + word.length);
  }

  /** Reads the bodies of pending here-documents after a newline at `this.index`. */
  private readHeredocs(): void {
    for (const pending of this.pending.splice(0)) {
      const lines: string[] = [];
      for (;;) {
        if (this.index >= this.text.length) break;
        const lineEnd = this.text.indexOf('\n', this.index);
        const line = this.text.slice(this.index, lineEnd < 0 ? this.text.length : lineEnd);
        this.index = lineEnd < 0 ? this.text.length : lineEnd + 1;
        const compared = pending.stripTabs ? line.replace(/^\t+/, '') : line;
        if (compared === pending.delimiter) break;
        lines.push(pending.stripTabs ? compared : line);
      }
      const body = lines.length > 0 ? `${lines.join('\n')}\n` : '';
      // An unquoted delimiter makes the body expand like a double-quoted string.
      const expands = !pending.quoted && this.scanExpansions(body);
      pending.redirect.heredoc = { body, expands: !pending.quoted && (expands || /[\\$`]/.test(body)) };
    }
  }

  /**
   * Parses commands until the end of the text, or until `terminator`: `)` (a subshell) or
   * `case` (a `case` arm, which ends at `;;`, `;&`, `;;&` or `esac`).
   */
  parseList(terminator: ')' | 'case' | undefined): void {
    const { text } = this;
    let command: SimpleCommand = { assignments: [], words: [], redirects: [], piped: false };
    let piped = false;
    const atStart = () =>
      command.words.length === 0 && command.assignments.length === 0 && command.redirects.length === 0;
    const end = (nextPiped: boolean) => {
      if (!atStart()) this.sink.commands.push(command);
      command = { assignments: [], words: [], redirects: [], piped: nextPiped };
      piped = nextPiped;
    };

    while (this.index < text.length) {
      this.skipBlanks();
      if (this.index >= text.length) break;
      const char = text[this.index]!;
      const next = text[this.index + 1];

      if (char === '#') {
        while (this.index < text.length && text[this.index] !== '\n') this.index += 1;
        continue;
      }
      if (char === '\n') {
        // A newline right after `|` continues the pipeline.
        end(atStart() && piped);
        this.index += 1;
        if (this.pending.length > 0) this.readHeredocs();
        continue;
      }
      if (terminator === ')' && char === ')') {
        end(false);
        return;
      }
      if (terminator === 'case' && (text.startsWith(';;', this.index) || text.startsWith(';&', this.index))) {
        end(false);
        return;
      }
      if (terminator === 'case' && atStart() && this.peekReserved('esac')) {
        end(false);
        return;
      }
      if (char === ';' || char === '&' || char === '|') {
        if (char === '&' && next === '>') {
          this.readRedirect(command, undefined);
          continue;
        }
        const pipe = char === '|' && next !== '|';
        if (char === ';' && next === ';') throw new ShellParseError('unexpected ;;');
        end(pipe);
        this.index +=
          (char === '&' && next === '&') || (char === '|' && (next === '|' || next === '&')) ? 2 : 1;
        continue;
      }
      if (char === ')') throw new ShellParseError('unmatched )');
      if (char === '(') {
        if (atStart()) {
          if (next === '(') {
            const close = findArithmeticEnd(text, this.index + 2);
            if (close >= 0) {
              this.checkArithmetic(text.slice(this.index + 2, close), text.slice(this.index, close + 2));
              this.index = close + 2;
              continue;
            }
          }
          this.index += 1;
          const inner = new Parser(text, this.depth + 1, this.sink);
          inner.index = this.index;
          inner.parseList(')');
          inner.finish();
          if (text[inner.index] !== ')') throw new ShellParseError('unterminated (');
          this.index = inner.index + 1;
          continue;
        }
        if (command.words.length === 1 && command.assignments.length === 0) {
          // `name () body`: a function definition.
          let close = this.index + 1;
          while (isBlank(text[close])) close += 1;
          if (text[close] !== ')') throw new ShellParseError('unexpected (');
          this.hazard(
            'a function definition (a function can take the name of an allowed command)',
            `${command.words[0]!.text}()`,
          );
          command.words = [];
          this.index = close + 1;
          continue;
        }
        throw new ShellParseError('unexpected (');
      }
      if ((char === '<' || char === '>') && next !== '(') {
        this.readRedirect(command, undefined);
        continue;
      }

      if (char === '!' && next === '(' && atStart()) {
        // `!(...)`: a negated subshell, or with extglob on, a glob as the command name.
        this.hazard('a pattern !(...) in command position (a glob when extglob is on)', '!(');
        this.index += 1;
        continue;
      }
      const wordStart = this.index;
      const word = this.readWord();
      // A file descriptor before a redirection: `2>`, `{fd}>`.
      if (
        (text[this.index] === '<' || text[this.index] === '>') &&
        text[this.index + 1] !== '(' &&
        !word.quoted &&
        /^(?:[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\})$/.test(word.text)
      ) {
        this.readRedirect(command, word.text);
        continue;
      }
      if (atStart() && !word.quoted && !word.dynamic && this.reservedWord(word.text, wordStart)) {
        continue;
      }
      if (command.words.length === 0 && ASSIGNMENT.test(text.slice(wordStart, this.index))) {
        command.assignments.push(word);
        continue;
      }
      if (command.words.length === 0) command.piped = piped;
      command.words.push(word);
    }
    if (terminator === ')') throw new ShellParseError('unterminated (');
    end(false);
  }

  /** Handles a reserved word at the start of a command; returns false if `word` is not one. */
  private reservedWord(word: string, wordStart: number): boolean {
    const { text } = this;
    if (STRUCTURE_WORDS.has(word)) return true;
    switch (word) {
      case 'time': {
        for (;;) {
          this.skipBlanks();
          if (this.peekReserved('-p')) this.index += 2;
          else if (this.peekReserved('--')) this.index += 2;
          else break;
        }
        return true;
      }
      case 'function': {
        this.skipBlanks();
        const name = this.readWord();
        this.skipBlanks();
        if (text[this.index] === '(') {
          let close = this.index + 1;
          while (isBlank(text[close])) close += 1;
          if (text[close] === ')') this.index = close + 1;
        }
        this.hazard(
          'a function definition (a function can take the name of an allowed command)',
          `function ${name.text}`,
        );
        return true;
      }
      case 'coproc': {
        this.hazard('a coprocess (coproc)', 'coproc');
        // `coproc NAME { ...; }`: NAME is not a command.
        const save = this.index;
        this.skipBlanks();
        const name = this.readWord();
        this.skipBlanks();
        const after = text[this.index];
        if (!(IDENTIFIER.test(name.text) && (after === '{' || after === '('))) this.index = save;
        return true;
      }
      case 'for':
      case 'select': {
        this.skipBlanks();
        if (text.startsWith('((', this.index)) {
          const close = findArithmeticEnd(text, this.index + 2);
          if (close < 0) throw new ShellParseError('unterminated for ((');
          this.checkArithmetic(text.slice(this.index + 2, close), text.slice(wordStart, close + 2));
          this.index = close + 2;
          return true;
        }
        const name = this.readWord();
        if (isSensitiveVariable(name.text, true)) {
          this.hazard(
            `an assignment to ${name.text} (it changes how later programs behave)`,
            `${word} ${name.text}`,
          );
        }
        // The word list (`in a b c`) is data; expansions in it were scanned by readWord.
        for (;;) {
          this.skipBlanks();
          const char = text[this.index];
          if (char === undefined || char === ';' || char === '\n' || char === '&' || char === '|') break;
          if (char === '<' || char === '>' || char === '(' || char === ')') break;
          if (this.peekReserved('do')) break;
          this.readWord();
        }
        return true;
      }
      case 'case': {
        this.skipBlanks();
        this.readWord();
        for (;;) {
          while (isBlank(text[this.index]) || text[this.index] === '\n') this.index += 1;
          if (this.peekReserved('in')) {
            this.index += 2;
            break;
          }
          throw new ShellParseError('case without in');
        }
        for (;;) {
          while (isBlank(text[this.index]) || text[this.index] === '\n' || text[this.index] === ';') {
            this.index += 1;
          }
          if (text[this.index] === '#') {
            while (this.index < text.length && text[this.index] !== '\n') this.index += 1;
            continue;
          }
          if (this.index >= text.length) throw new ShellParseError('case without esac');
          if (this.peekReserved('esac')) {
            this.index += 4;
            return true;
          }
          if (text[this.index] === '(') this.index += 1;
          // Patterns, separated by `|`, up to `)`.
          for (;;) {
            this.skipBlanks();
            if (text[this.index] === ')') {
              this.index += 1;
              break;
            }
            if (text[this.index] === '|') {
              this.index += 1;
              continue;
            }
            if (this.index >= text.length) throw new ShellParseError('unterminated case pattern');
            const before = this.index;
            this.readWord();
            if (this.index === before) throw new ShellParseError('unexpected character in a case pattern');
          }
          const arm = new Parser(text, this.depth + 1, this.sink);
          arm.index = this.index;
          arm.parseList('case');
          arm.finish();
          this.index = arm.index;
          if (text.startsWith(';;&', this.index)) this.index += 3;
          else if (text.startsWith(';;', this.index) || text.startsWith(';&', this.index)) this.index += 2;
        }
      }
      case '[[': {
        this.parseConditional();
        return true;
      }
      default:
        return false;
    }
  }

  /** `[[ ... ]]`: operands are words; `-eq` and friends evaluate their operands as arithmetic. */
  private parseConditional(): void {
    const { text } = this;
    const tokens: ShellWord[] = [];
    let regexNext = false;
    for (;;) {
      while (isBlank(text[this.index]) || text[this.index] === '\n') this.index += 1;
      if (this.index >= text.length) throw new ShellParseError('unterminated [[');
      if (text.startsWith(']]', this.index) && this.atDelimiter(this.index + 2)) {
        this.index += 2;
        break;
      }
      const two = text.slice(this.index, this.index + 2);
      if (two === '&&' || two === '||') {
        this.index += 2;
        continue;
      }
      const char = text[this.index]!;
      if (char === '(' || char === ')' || char === '<' || char === '>') {
        this.index += 1;
        continue;
      }
      const before = this.index;
      const word = this.readWord(regexNext);
      if (this.index === before) throw new ShellParseError(`unexpected ${text[this.index]} in [[ ]]`);
      regexNext = word.text === '=~' && !word.quoted;
      tokens.push(word);
    }
    for (let index = 0; index < tokens.length; index += 1) {
      const token = tokens[index]!;
      if (token.quoted) continue;
      if (ARITHMETIC_COMPARISONS.has(token.text)) {
        for (const operand of [tokens[index - 1], tokens[index + 1]]) {
          if (operand && !isLiteralNumber(operand.text) && !/^\$[#?$!]$/.test(operand.text)) {
            this.hazard(ARITHMETIC_REASON, `[[ … ${token.text} … ]]`);
          }
        }
      }
      if (token.text === '-v' && tokens[index + 1]) {
        checkVariableName(tokens[index + 1]!, (reason, source) => this.hazard(reason, source));
      }
    }
  }

  /** Reads a redirection operator and its target at the current position. */
  private readRedirect(command: SimpleCommand, fd: string | undefined): void {
    const { text } = this;
    const operators = ['&>>', '<<<', '<<-', '&>', '>>', '>|', '>&', '<&', '<>', '<<', '<', '>'];
    const op = operators.find((candidate) => text.startsWith(candidate, this.index))!;
    this.index += op.length;
    this.skipBlanks();
    if (this.index >= text.length || '\n;&|)'.includes(text[this.index]!)) {
      throw new ShellParseError(`a redirection ${op} without a target`);
    }
    const redirect: Redirect = { op, fd, target: undefined };
    const target = this.readWord();
    redirect.target = target;
    if (op === '<<' || op === '<<-') {
      this.pending.push({
        redirect,
        delimiter: target.text,
        quoted: Boolean(target.quoted),
        stripTabs: op === '<<-',
      });
    }
    command.redirects.push(redirect);
  }
}

/** A variable name given to a builtin (`read`, `printf -v`, `test -v`): a subscript is arithmetic. */
function checkVariableName(word: ShellWord, hazard: (reason: string, source: string) => void): void {
  if (word.dynamic && !/^[A-Za-z_][A-Za-z0-9_]*\[[@*]\]$/.test(word.text)) {
    hazard(`a variable name computed at run time (${ARITHMETIC_REASON})`, word.text);
    return;
  }
  const subscript = /^[A-Za-z_][A-Za-z0-9_]*\[(.*)\]$/s.exec(word.text);
  if (subscript && subscript[1] !== '@' && subscript[1] !== '*' && !isLiteralNumber(subscript[1]!)) {
    hazard(`an array subscript that is not a number (${ARITHMETIC_REASON})`, word.text);
  }
}

function parseScript(line: string, depth: number): Sink {
  if (line.includes('\0')) throw new ShellParseError('the command contains a NUL byte');
  const sink: Sink = { commands: [], hazards: [], order: 0 };
  const parser = new Parser(line, depth, sink);
  parser.parseList(undefined);
  parser.finish();
  return sink;
}

/** Splits a line into its simple commands (as words), nested substitutions included. */
export function parseSimpleCommands(line: string): ShellWord[][] {
  return parseScript(line, 0)
    .commands.map((command) => command.words)
    .filter((words) => words.length > 0);
}

function basename(name: string): string {
  const trimmed = name.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1) || name;
}

function joinWords(words: readonly ShellWord[]): string {
  return words.map((word) => word.text).join(' ');
}

/** Where a command's standard input comes from. */
function stdinOf(command: SimpleCommand): StdinSource {
  let source: StdinSource = command.piped ? { kind: 'pipe' } : { kind: 'inherited' };
  for (const redirect of command.redirects) {
    const fd = redirect.fd ?? (redirect.op.startsWith('<') ? '0' : '1');
    if (fd !== '0') continue;
    if (redirect.op === '<<' || redirect.op === '<<-') {
      const heredoc = redirect.heredoc ?? { body: '', expands: false };
      source = { kind: 'text', text: heredoc.body, literal: !heredoc.expands };
    } else if (redirect.op === '<<<') {
      const target = redirect.target!;
      source = { kind: 'text', text: `${target.text}\n`, literal: !target.dynamic };
    } else if (redirect.op === '<' || redirect.op === '<>') {
      source = { kind: 'file' };
    } else if (redirect.op === '<&') {
      source = redirect.target?.text === '-' ? { kind: 'closed' } : { kind: 'pipe' };
    }
  }
  return source;
}

/** Checks a variable assignment: its name, subscript and the paths its value names. */
function checkAssignment(
  name: string,
  value: string,
  options: { persistent: boolean; subscript?: string; source: string },
  hazard: (reason: string, source: string) => void,
  runValue: (value: string) => void,
): void {
  const risk = variableRisk(name, options.persistent);
  if (risk === 'refuse') {
    hazard(
      options.persistent
        ? `an assignment to ${name} (it changes how later programs behave)`
        : `${name} set for a command (it changes what the program runs or reads)`,
      options.source,
    );
  } else if (risk === 'command') {
    runValue(value);
  }
  if (
    options.subscript !== undefined &&
    !isLiteralNumber(options.subscript) &&
    !/^[@*]$/.test(options.subscript)
  ) {
    hazard(`an array subscript that is not a number (${ARITHMETIC_REASON})`, options.source);
  }
  const mention = configPathHazard(value);
  if (mention) hazard(mention, options.source);
}

/** Resolves a script to every command it would run, with hazards in line order. */
function resolveScript(line: string, depth: number, out: ParsedCommand[], placeholder?: string): void {
  const sink = parseScript(line, depth);
  const hazardEntry = (reason: string, source: string): ParsedCommand => ({
    name: source,
    args: [],
    dynamic: true,
    reason,
    source,
  });
  // Hazards found by the grammar (arithmetic, `${x@P}`, function definitions, ...) come first:
  // each refuses the line on its own.
  for (const hazard of sink.hazards) out.push(hazardEntry(hazard.reason, hazard.source));
  const hazard = (reason: string, source: string) => out.push(hazardEntry(reason, source));

  for (const command of sink.commands) {
    const special = command.words.length > 0 && isSpecialBuiltin(command.words[0]!.text);
    const persistent = command.words.length === 0 || special;
    for (const assignment of command.assignments) {
      const match = ASSIGNMENT.exec(assignment.text);
      if (!match) continue;
      checkAssignment(
        match[1]!,
        assignment.text.slice(match[0].length),
        {
          persistent,
          ...(match[2] ? { subscript: match[2].slice(1, -1) } : {}),
          source: assignment.text,
        },
        hazard,
        (value) => resolveScript(value, depth + 1, out),
      );
    }
    for (const redirect of command.redirects) {
      const target = redirect.target;
      if (!target || redirect.op === '<<' || redirect.op === '<<-' || redirect.op === '<<<') continue;
      if (redirect.op.endsWith('&') && /^(?:-|[0-9]+)$/.test(target.text)) continue;
      const writes = redirect.op !== '<' && redirect.op !== '<&';
      const reason = configPathHazard(target.text) ?? (writes ? outputPathHazard(target) : undefined);
      if (reason) hazard(reason, `${redirect.op} ${target.text}`);
    }
    if (command.words.length === 0) continue;
    const at = out.length;
    resolveWords(command.words, out, depth, stdinOf(command), placeholder);
    const paths = command.redirects
      .filter((redirect) => redirect.target && !redirect.op.startsWith('<<'))
      .map((redirect) => redirect.target!.text);
    if (paths.length > 0 && out[at]) out[at]!.paths = paths;
  }
}

/**
 * Resolves the words of one simple command (or of a command a wrapper runs): the command itself,
 * then whatever its program runs (shell-parse-programs.ts).
 */
function resolveWords(
  words: readonly ShellWord[],
  out: ParsedCommand[],
  depth: number,
  stdin: StdinSource,
  placeholder?: string,
  inputAppended = false,
): void {
  if (depth > MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
  if (words.length === 0) return;
  const first = words[0]!;
  const source = joinWords(words);
  const fromInput = placeholder !== undefined && first.text.includes(placeholder);
  const argsDynamic = words.slice(1).some((word) => word.dynamic);
  if (first.dynamic || fromInput) {
    out.push({
      name: first.text,
      args: words.slice(1).map((word) => word.text),
      dynamic: true,
      reason: fromInput
        ? `the command name comes from the input (${placeholder})`
        : 'the command name is computed at run time',
      ...(argsDynamic ? { argsDynamic } : {}),
      source,
    });
    return;
  }
  const name = basename(first.text);
  out.push({
    name,
    args: words.slice(1).map((word) => word.text),
    dynamic: false,
    ...(argsDynamic ? { argsDynamic } : {}),
    source,
  });
  const hazard = (reason: string, where = source) =>
    out.push({ name: where, args: [], dynamic: true, reason, source: where });
  if (first.text.startsWith('/proc/') || first.text.startsWith('/dev/fd/')) {
    hazard('a program named through /proc or /dev/fd (it can be the shell itself)');
  }
  for (let index = 1; index < words.length; index += 1) {
    const reason = configPathHazard(words[index]!.text);
    if (reason) hazard(reason);
  }
  const copies = name === 'cp' || name === 'mv' || name === 'install' || name === 'ln' || name === 'rsync';
  for (const file of writtenFiles(name, words)) {
    const reason = outputPathHazard(file, { copied: copies });
    if (reason) {
      hazard(reason);
      break;
    }
  }
  // Most commands (ls, cat, grep) run nothing else: no context to build.
  if (!hasProgramKnowledge(name)) return;
  const context: ProgramContext = {
    name,
    words,
    stdin,
    source,
    ...(placeholder !== undefined ? { placeholder } : {}),
    ...(inputAppended ? { inputAppended } : {}),
    hazard,
    command: (wrapped, options = {}) =>
      resolveWords(
        wrapped,
        out,
        depth + 1,
        options.stdin ?? stdin,
        options.placeholder,
        options.inputAppended ?? false,
      ),
    script: (word, what) => {
      if (typeof word !== 'string' && word.dynamic) {
        hazard(`${what} is computed at run time`);
        return;
      }
      // A script holding the wrapper's placeholder (`xargs -I{} sh -c {}`): a command named by
      // the input is then one the policy cannot see.
      resolveScript(typeof word === 'string' ? word : word.text, depth + 1, out, placeholder);
    },
    assignment: (assignmentName, value, persistent) =>
      checkAssignment(assignmentName, value, { persistent, source }, hazard, (text) =>
        resolveScript(text, depth + 1, out),
      ),
    variableName: (word) => checkVariableName(word, hazard),
    arithmetic: (text) => {
      if (!isLiteralNumber(text)) hazard(ARITHMETIC_REASON);
    },
  };
  resolveProgram(context);
}

/**
 * Resolves a line to every command it would run: wrapper chains (`sudo env X=1 /bin/rm`) yield
 * each wrapper and the wrapped command; `sh -c STRING` and the like are parsed recursively; what
 * cannot be seen into is an entry with `dynamic: true` (and a `reason` for constructs).
 */
export function parseCommandLine(line: string, depth = 0): ParsedCommand[] {
  if (depth > MAX_DEPTH) throw new ShellParseError('command nesting is too deep');
  const out: ParsedCommand[] = [];
  resolveScript(line, depth, out);
  return out;
}
