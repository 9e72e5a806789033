// Options read the way getopt_long reads them (clusters, attached values, unambiguous
// abbreviations of long options, `--`), for the program handlers: a handler says which options take
// a value, and an option it does not know is reported rather than guessed.

import type { ProgramContext, ShellWord } from './types.js';

/** A flag, a value (the next word or attached), an optional value (attached only), or N words. */
type OptionKind = 'flag' | 'value' | 'optional' | 2 | 3;

export interface OptionSpec {
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
  /** All its words, for an option that takes several (`bwrap --setenv VAR VALUE`). */
  values?: ShellWord[];
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

export const HELP: Record<string, OptionKind> = { help: 'flag', version: 'flag' };

function attached(word: ShellWord, text: string): ShellWord {
  return { text, dynamic: word.dynamic };
}

/** Reads options the way getopt_long does; stops at `--`. */
export function scanOptions(words: readonly ShellWord[], start: number, spec: OptionSpec): OptionScan {
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
      } else if (typeof kind === 'number') {
        const values = words.slice(index + 1, index + 1 + kind);
        options.push({ name: `--${name}`, ...(values[0] ? { value: values[0] } : {}), values });
        index += 1 + kind;
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

/**
 * An option list written the way a program's `--help` or manual lists it:
 * `-n= --adjustment= -v --verbose --help`. A name followed by `=` takes a value (`-n 5`, `-n5`,
 * `--adjustment=5`, `--adjustment 5`); by `=2` or `=3`, that many words (`--bind SRC DEST`); by
 * `[=]`, an optional value that can only be attached (`-m`, `--mount=FILE`); a bare name is a
 * flag. Short options not in the list are unknown, and so are long ones unless `lenientLong`.
 */
export function optionList(list: string, extra: Omit<OptionSpec, 'long'> = {}): OptionSpec {
  let shortValue = '';
  let shortOptional = '';
  let shortFlags = '';
  const long: Record<string, OptionKind> = {};
  for (const item of list.split(/\s+/).filter(Boolean)) {
    const match = /^(--?)([^=[]+)(=[23]?|\[=\])?$/.exec(item);
    if (!match) throw new Error(`bad option list item ${item}`);
    const [, dashes, name, suffix] = match;
    const kind: OptionKind =
      suffix === '[=]' ? 'optional' : suffix === '=2' ? 2 : suffix === '=3' ? 3 : suffix ? 'value' : 'flag';
    if (dashes === '--') long[name!] = kind;
    else if (name!.length !== 1) throw new Error(`bad short option ${item}`);
    else if (kind === 'value') shortValue += name;
    else if (kind === 'optional') shortOptional += name;
    else shortFlags += name;
  }
  return { shortValue, shortOptional, shortFlags, long, ...extra };
}

/**
 * Whether a word is one of `names` given as a long option, however abbreviated (`--co=rm` is
 * `--compress-program=rm`): any prefix counts, since getopt_long either takes an unambiguous one
 * or refuses to run, except a prefix that is itself the exact name of another of the program's
 * options (`others`), which getopt_long takes as that option.
 */
export function longOptionNamed(
  text: string,
  names: readonly string[],
  others: readonly string[] = [],
): string | undefined {
  if (!text.startsWith('--') || text.length < 3) return undefined;
  const equals = text.indexOf('=');
  const given = text.slice(2, equals < 0 ? undefined : equals);
  if (given === '' || others.includes(given)) return undefined;
  return names.find((name) => name.startsWith(given));
}

export function has(scan: OptionScan, ...names: string[]): boolean {
  return scan.options.some((option) => names.includes(option.name));
}

export function valuesOf(scan: OptionScan, ...names: string[]): ShellWord[] {
  return scan.options
    .filter((option) => names.includes(option.name) && option.value)
    .map((option) => option.value!);
}

export function unknownOption(context: ProgramContext, option: string): void {
  context.hazard(
    `an option of ${context.name} this policy does not know (${option}), so it cannot tell what ${context.name} runs`,
  );
}

export type Handler = (context: ProgramContext) => void;
