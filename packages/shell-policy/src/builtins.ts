// bash builtins that run strings or change what later commands mean (`eval`, `source`, `alias`,
// `trap`, `hash -p`, `declare -n`, ...) or assign variables (`read`, `printf -v`, `mapfile`).

import { type Handler, has, type OptionSpec, scanOptions } from './options.js';
import { isSensitiveVariable } from './shell-parse-environment.js';
import type { ShellWord } from './types.js';

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

export const BUILTIN_HAZARDS: Record<string, Handler> = {
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
