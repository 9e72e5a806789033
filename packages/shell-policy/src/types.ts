// The shapes the shell parser and the program table share: words, parsed commands, where a
// command's input comes from, and what a program handler may report (a leaf module, so that the
// parser, the program table and the environment lists import it and not each other).

export interface ShellWord {
  /** The word with quotes and escapes removed (expansions left as written). */
  text: string;
  /** Contains an expansion, an unquoted glob, a brace expansion or a process substitution. */
  dynamic: boolean;
  /** Some part of it was quoted or escaped. */
  quoted?: boolean;
  /** A process substitution `<(...)` / `>(...)`: the program sees a /dev/fd path. */
  processSubstitution?: boolean;
}

export interface ParsedCommand {
  /** Basename of the command word (`/bin/rm` → `rm`, `\rm` → `rm`). */
  name: string;
  /** Arguments after the command word, quotes removed. */
  args: string[];
  /**
   * What this runs cannot be checked statically: the command name is computed at run time, or
   * (with `reason`) the line contains a construct the parser cannot see into.
   */
  dynamic: boolean;
  /** Why it cannot be checked (absent for an ordinary command). */
  reason?: string;
  /** Some argument is computed at run time (an expansion, a glob, a brace expansion). */
  argsDynamic?: boolean;
  /** Files its redirections name (`< /bin/rm`, `> out`). */
  paths?: string[];
  /** The words as written, for messages. */
  source: string;
}

/** Where a command's standard input comes from. */
export type StdinSource =
  | { kind: 'inherited' }
  | { kind: 'pipe' }
  | { kind: 'file' }
  | { kind: 'closed' }
  /** A here-document or here-string; `literal` when nothing in it expands. */
  | { kind: 'text'; text: string; literal: boolean };

/** What a program handler may report about the command it looks at. */
export interface ProgramContext {
  /** The command's name (basename). */
  name: string;
  /** The command's words, the command itself first. */
  words: readonly ShellWord[];
  stdin: StdinSource;
  source: string;
  /** Text a wrapper (`xargs -I{}`, `find -exec`) replaces with its input wherever it occurs in the words. */
  placeholder?: string;
  /** A wrapper (`xargs` without `-I`) appends its input to the words. */
  inputAppended?: boolean;
  /** Reports a construct the parser cannot see into (a noun phrase: "sed's e command (...)"). */
  hazard(reason: string, where?: string): void;
  /** Resolves words that form another command (argv), e.g. what a wrapper runs. */
  command(
    words: readonly ShellWord[],
    options?: { stdin?: StdinSource; placeholder?: string; inputAppended?: boolean },
  ): void;
  /** Parses a string a shell will run (`sh -c`, `flock -c`); a computed one is a hazard. */
  script(word: ShellWord | string, what: string): void;
  /** Checks an environment assignment the program makes for the command it runs. */
  assignment(name: string, value: string, persistent: boolean): void;
  /** Checks a variable name given to a builtin (`read`, `printf -v`). */
  variableName(word: ShellWord): void;
  /** Checks a value bash evaluates as arithmetic. */
  arithmetic(text: string): void;
}
