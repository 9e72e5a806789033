// Command-line parsing: `shears <command> [FILE] [--config FILE] [--flag value] [--a.b value]`.
// Dotted flags override config fields (`--env.group_size 8`); a few short flags map onto them.
import { InvalidArgumentError } from '@shears/core';

export interface ParsedArgs {
  command: string | undefined;
  positionals: string[];
  /** Dotted config paths → raw text values. */
  overrides: Record<string, string>;
  /** Flags that are not config fields (`--config`, `--help`, `--resume`, ...). */
  flags: Record<string, string | true>;
}

/** Short flags and the config field each one sets. */
export const FLAG_ALIASES: Record<string, string> = {
  env: 'env.name',
  tasks: 'env.settings.tasks',
  groups: 'run.groups',
  'group-size': 'env.group_size',
  concurrency: 'run.concurrency',
  seed: 'env.seed',
  'max-turns': 'env.max_turns',
  out: 'run.out',
  model: 'server.model',
  'base-url': 'server.base_url',
  provider: 'server.provider',
  tokenizer: 'server.tokenizer',
  sandbox: 'sandbox.provider',
  url: 'api.url',
  port: 'api.port',
  host: 'api.host',
  k: 'evaluate.k',
  'max-items': 'evaluate.max_items',
  progress: 'run.progress',
  plugins: 'plugins',
};

/** Flags that are not config fields; `true` means the flag takes no value. */
export const PLAIN_FLAGS: Record<string, boolean> = {
  config: false,
  help: true,
  version: true,
  resume: true,
  force: true,
  'no-report': true,
  json: true,
  html: false,
  'max-groups': false,
  open: true,
};

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const result: ParsedArgs = { command: undefined, positionals: [], overrides: {}, flags: {} };
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index]!;
    if (token === '-h') {
      result.flags.help = true;
      continue;
    }
    if (!token.startsWith('--')) {
      if (result.command === undefined) result.command = token;
      else result.positionals.push(token);
      continue;
    }
    let name = token.slice(2);
    let value: string | undefined;
    const equals = name.indexOf('=');
    if (equals >= 0) {
      value = name.slice(equals + 1);
      name = name.slice(0, equals);
    }
    const takesNoValue = PLAIN_FLAGS[name] === true;
    const takeValue = (): string => {
      if (value !== undefined) return value;
      const next = argv[index + 1];
      if (next === undefined || (next.startsWith('--') && !/^--?\d/.test(next))) {
        throw new InvalidArgumentError({ argument: `--${name}`, message: `Flag --${name} needs a value` });
      }
      index++;
      return next;
    };
    if (name in PLAIN_FLAGS) {
      result.flags[name] = takesNoValue ? true : takeValue();
      if (name === 'no-report') result.overrides['run.report'] = 'false';
    } else if (name in FLAG_ALIASES) {
      result.overrides[FLAG_ALIASES[name]!] = takeValue();
    } else if (name.includes('.')) {
      result.overrides[name] = takeValue();
    } else {
      const known = [...Object.keys(PLAIN_FLAGS), ...Object.keys(FLAG_ALIASES)].map((flag) => `--${flag}`);
      throw new InvalidArgumentError({
        argument: `--${name}`,
        message: `Unknown flag --${name} (allowed: ${known.join(', ')}, or a dotted config field such as --env.group_size 8)`,
      });
    }
  }
  return result;
}
