// The command-line surface, for every subcommand and every flag in COMMAND_SPECS: each flag
// reaches its config field with the field's type, each command refuses the flags it does not
// have, positional arguments it does not take, overrides of sections it does not read, and a
// value given twice; per-command help lists its flags, config sections and examples.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { valueAtPath } from '@shears/core/internal';
import { describe, expect, it } from 'vitest';
import { COMMAND_SPECS, cliVersion, type ParsedArgs, parseArgs, renderCliReference } from './args.js';
import { loadConfig } from './config/load-config.js';

const quiet = { stdout: () => undefined, stderr: () => undefined };

function parsed(argv: string[]): ParsedArgs {
  const outcome = parseArgs(argv, quiet);
  if (outcome.kind !== 'run') throw new Error(`expected a command to run from ${argv.join(' ')}`);
  return outcome.args;
}

function refusal(argv: string[]): string {
  try {
    parseArgs(argv, quiet);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`expected ${argv.join(' ')} to be refused`);
}

/** A value to give each config field a flag sets, and what the config must hold afterwards. */
const SAMPLES: Record<string, [text: string, expected: unknown]> = {
  'env.name': ['hello', 'hello'],
  // A task spec is text even when it looks like a number.
  'env.settings.tasks': ['123', '123'],
  'env.group_size': ['3', 3],
  'env.seed': ['-7', -7],
  'env.max_turns': ['5', 5],
  plugins: ['a-pack, ./b', ['a-pack', './b']],
  'server.provider': ['openai', 'openai'],
  'server.base_url': ['http://127.0.0.1:9/v1', 'http://127.0.0.1:9/v1'],
  'server.model': ['1.5', '1.5'],
  'server.tokenizer': ['./tok', './tok'],
  'sandbox.provider': ['docker', 'docker'],
  'run.groups': ['9', 9],
  'run.concurrency': ['2', 2],
  'run.out': ['x/y.jsonl', 'x/y.jsonl'],
  'run.report': ['', false],
  'run.metrics': ['', false],
  'run.progress': ['lines', 'lines'],
  'api.url': ['http://127.0.0.1:9', 'http://127.0.0.1:9'],
  'cluster.address': ['ray://127.0.0.1:6379', 'ray://127.0.0.1:6379'],
  'api.host': ['0.0.0.0', '0.0.0.0'],
  'api.port': ['0', 0],
  'evaluate.k': ['8', 8],
  'evaluate.max_items': ['2', 2],
  'evaluate.out': ['e.jsonl', 'e.jsonl'],
  'train.workers': ['2', 2],
  'train.output': ['./my-ft', './my-ft'],
};

/** Flags a command reads itself (not config fields), and the command file that reads them. */
const COMMAND_FILES: Record<string, string> = {
  process: 'commands/process.ts',
  serve: 'commands/serve.ts',
  evaluate: 'commands/evaluate.ts',
  view: 'commands/view.ts',
  export: 'commands/export.ts',
  doctor: 'commands/doctor.ts',
  train: 'commands/train.ts',
  prepare: 'commands/prepare.ts',
};

const allFlagNames = [...new Set(COMMAND_SPECS.flatMap((spec) => spec.flags.map((flag) => flag.name)))];

describe('every flag of every command', () => {
  for (const spec of COMMAND_SPECS) {
    it(`shears ${spec.name}: each config flag reaches its field with the field's type`, () => {
      for (const flag of spec.flags.filter((entry) => entry.config)) {
        const sample = SAMPLES[flag.config!];
        expect(sample, `a sample value for ${flag.config} (--${flag.name})`).toBeDefined();
        const [text, expected] = sample!;
        const argv = [spec.name, ...(spec.argument ? ['file.jsonl'] : []), `--${flag.name}`];
        if (flag.value) argv.push(text);
        const args = parsed(argv);
        expect(Object.keys(args.overrides)).toEqual([flag.config]);
        const { config } = loadConfig({ overrides: args.overrides, environment: {} });
        expect(valueAtPath(config, flag.config!.split('.')), `--${flag.name}`).toEqual(expected);
      }
    });

    it(`shears ${spec.name}: flags that are not config fields are read by the command`, () => {
      const own = spec.flags.filter((flag) => !flag.config && flag.name !== 'config');
      if (own.length === 0) return;
      const source = readFileSync(join(import.meta.dirname, COMMAND_FILES[spec.name]!), 'utf8');
      for (const flag of own) {
        const args = parsed([
          spec.name,
          ...(spec.argument ? ['f'] : []),
          `--${flag.name}`,
          ...(flag.value ? ['v'] : []),
        ]);
        expect(args.flags[flag.name]).toBe(flag.value ? 'v' : true);
        expect(source, `${COMMAND_FILES[spec.name]} reads --${flag.name}`).toMatch(
          new RegExp(`flags(\\.${flag.name}\\b|\\['${flag.name}'\\])`),
        );
      }
    });

    it(`shears ${spec.name}: refuses the flags other commands have, short flags, and a flag given twice`, () => {
      const own = new Set(spec.flags.map((flag) => flag.name));
      const base = [spec.name, ...(spec.argument ? ['file.jsonl'] : [])];
      for (const name of allFlagNames.filter((entry) => !own.has(entry)))
        expect(refusal([...base, `--${name}`, '1'])).toMatch(new RegExp(`unknown option '--${name}'`));
      for (const short of ['-g', '-k', '-o', '-x'])
        expect(refusal([...base, short, '2'])).toContain(`unknown option '${short}'`);
      expect(refusal([...base, '--open'])).toContain("unknown option '--open'");
      for (const flag of spec.flags.filter((entry) => entry.value))
        expect(refusal([...base, `--${flag.name}`, 'a', `--${flag.name}`, 'b'])).toContain(
          'given twice (a and b)',
        );
    });

    it(`shears ${spec.name}: refuses positional arguments it does not take`, () => {
      if (spec.argument) {
        expect(parsed([spec.name, 'a.jsonl']).positionals).toEqual(['a.jsonl']);
        expect(refusal([spec.name, 'a.jsonl', 'b.jsonl'])).toContain(
          `takes one file argument; also got "b.jsonl"`,
        );
        expect(refusal([spec.name])).toContain("missing required argument 'file'");
      } else {
        expect(refusal([spec.name, 'shears.yaml'])).toContain(
          `shears ${spec.name} takes no positional arguments, got "shears.yaml"`,
        );
      }
    });

    it(`shears ${spec.name}: --section.field overrides only for the config it reads`, () => {
      const base = [spec.name, ...(spec.argument ? ['file.jsonl'] : [])];
      const sections = [
        'env',
        'server',
        'sandbox',
        'run',
        'api',
        'evaluate',
        'train',
        'judge',
        'group_judge',
      ];
      for (const section of sections) {
        const path = `${section}.settings.x`;
        const reads = spec.reads.some((prefix) => path === prefix || path.startsWith(`${prefix}.`));
        if (reads)
          expect(parsed([...base, `--${path}`, '1']).overrides[path]).toEqual({
            text: '1',
            flag: `--${path}`,
          });
        else
          expect(refusal([...base, `--${path}`, '1'])).toContain(
            `shears ${spec.name} does not read ${path} (it reads: `,
          );
      }
      expect(refusal([...base, '--evn.name', 'x'])).toContain(
        'unknown config section "evn" (did you mean "env"?)',
      );
    });
  }
});

describe('help and version', () => {
  function output(argv: string[]): { code: number; stdout: string; stderr: string } {
    let stdout = '';
    let stderr = '';
    const outcome = parseArgs(argv, {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
    });
    if (outcome.kind !== 'exit') throw new Error('expected help or version output');
    return { code: outcome.code, stdout, stderr };
  }

  it('prints each command its own help: every flag, the config it reads and its examples', () => {
    for (const spec of COMMAND_SPECS) {
      for (const argv of [
        [spec.name, '--help'],
        [spec.name, '-h'],
        ['help', spec.name],
      ]) {
        const help = output(argv);
        expect(help.code, argv.join(' ')).toBe(0);
        expect(help.stdout).toContain(`Usage: shears ${spec.name}`);
        for (const flag of spec.flags) expect(help.stdout).toContain(`--${flag.name}`);
        for (const example of spec.examples) expect(help.stdout).toContain(example);
        if (spec.reads.length) expect(help.stdout).toContain(`Config read: ${spec.reads.join(', ')}.`);
        // Not the general help.
        expect(help.stdout).not.toContain('Commands:');
      }
    }
  });

  it('prints the version with exit 0, and the general help without a command (exit 2)', () => {
    const version = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).version;
    expect(cliVersion()).toBe(version);
    for (const flag of ['--version', '-v'])
      expect(output([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    const none = output([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Commands:');
    expect(output(['--help']).code).toBe(0);
  });
});

describe('overrides', () => {
  it('refuse fields a command never reads, inside sections it partly reads', () => {
    const cases: Array<[string, string]> = [
      ['evaluate --run.groups 3', 'shears evaluate does not read run.groups'],
      ['evaluate --run.out x.jsonl', 'shears evaluate does not read run.out'],
      ['serve --run.groups 3', 'shears serve does not read run.groups'],
      ['serve --api.port 9000', 'shears serve does not read api.port'],
      ['api --api.url http://127.0.0.1:1', 'shears api does not read api.url'],
      ['api --api.off_policy_limit 2', 'shears api does not read api.off_policy_limit'],
      ['view f.jsonl --server.model m', 'shears view does not read server.model'],
      ['prepare --server.model m', 'shears prepare does not read server.model'],
      ['doctor --run.groups 2', 'shears doctor does not read run.groups'],
    ];
    for (const [line, message] of cases) expect(refusal(line.split(' ')), line).toContain(message);
    for (const line of [
      'evaluate --run.concurrency 2',
      'serve --api.poll_ms 50',
      'api --api.port 0',
      'train --api.url http://127.0.0.1:1',
    ])
      expect(() => parsed(line.split(' ')), line).not.toThrow();
  });

  it('refuses one config field set twice, also through a flag and its dotted path', () => {
    expect(refusal(['process', '--groups', '2', '--run.groups', '3'])).toBe(
      'run.groups is set twice: --groups 2 and --run.groups 3 (give it once)',
    );
    expect(refusal(['process', '--env.seed', '1', '--env.seed=2'])).toContain('env.seed is set twice');
  });

  it('takes --a.b=VALUE and values that start with a dash, and leaves tokens after -- alone', () => {
    const args = parsed(['process', '--env.settings.prefix=--x', '--seed', '-3']);
    expect(args.overrides['env.settings.prefix']).toEqual({ text: '--x', flag: '--env.settings.prefix' });
    expect(args.overrides['env.seed']?.text).toBe('-3');
    expect(refusal(['process', '--', '--env.seed', '1'])).toContain('takes no positional arguments');
    expect(refusal(['process', '--env..seed', '1'])).toContain('not a config path');
  });
});

describe('docs/cli.md', () => {
  it('is the reference generated from the flag table (regenerate: pnpm -F @shears/cli docs:cli)', () => {
    const committed = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');
    expect(committed).toBe(renderCliReference());
  });
});
