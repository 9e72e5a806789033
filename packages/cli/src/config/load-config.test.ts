import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@shears/core';
import { valueAtPath } from '@shears/core/internal';
import { afterAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { type ParsedArgs, parseArgs } from '../args.js';
import { configJsonSchema } from './config-json-schema.js';
import { shearsConfigSchema } from './config-schema.js';
import { loadConfig, schemaAtPath } from './load-config.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** parseArgs for a command line that runs a command (help and version print instead). */
function parsed(argv: string[]): ParsedArgs {
  const outcome = parseArgs(argv, { stdout: () => undefined, stderr: () => undefined });
  if (outcome.kind !== 'run') throw new Error(`expected a command to run from ${argv.join(' ')}`);
  return outcome.args;
}

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function errorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (ConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('fills every section with defaults when there is no file, but chooses no env', () => {
    const { config } = loadConfig({ environment: {} });
    expect(config.env).toMatchObject({ group_size: 4 });
    expect(config.env.name).toBeUndefined();
    expect(config.server.provider).toBe('scripted');
    expect(config.run.out).toBe('runs/shears.jsonl');
  });

  it('reads YAML and lets dotted flags override it, typed by the schema', () => {
    const path = write('a.yaml', 'env:\n  name: demo\n  group_size: 2\nrun:\n  report: true\n');
    const args = parsed([
      'process',
      '--config',
      path,
      '--env.group_size',
      '8',
      '--run.report',
      'false',
      '--groups',
      '3',
      '--env.settings.only',
      'x',
    ]);
    const { config } = loadConfig({ path, overrides: args.overrides, environment: {} });
    expect(config.env.group_size).toBe(8);
    expect(config.run.report).toBe(false);
    expect(config.run.groups).toBe(3);
    expect(config.env.settings).toEqual({ only: 'x' });
  });

  it('names the field, the value and what is allowed for a wrong type', () => {
    const error = errorOf(() => loadConfig({ overrides: { 'env.group_size': 'eight' }, environment: {} }));
    expect(error.message).toContain('env.group_size: expected number, got "eight"');
    expect(error.issues[0]).toMatchObject({ path: 'env.group_size', value: 'eight' });
  });

  it('names the bound for out-of-range numbers', () => {
    const path = write('b.json', JSON.stringify({ env: { group_size: 0 }, evaluate: { confidence: 1.5 } }));
    const error = errorOf(() => loadConfig({ path, environment: {} }));
    expect(error.message).toContain('env.group_size: must be >= 1, got 0');
    expect(error.message).toContain('evaluate.confidence: must be < 1, got 1.5');
  });

  it('lists allowed values for enums and suggests a field for a typo', () => {
    const path = write('c.yaml', 'run:\n  progress: fancy\nenv:\n  gruop_size: 4\n');
    const error = errorOf(() => loadConfig({ path, environment: {} }));
    expect(error.message).toContain('run.progress: got "fancy"; allowed: "auto", "bars", "lines", "none"');
    expect(error.message).toMatch(
      /env: unknown field "gruop_size" \(did you mean "group_size"\?\); allowed: name, group_size/,
    );
  });

  it('rejects unknown sections and bad URLs with field names', () => {
    const path = write('d.yaml', 'servre: {}\nserver:\n  base_url: not a url\n');
    const error = errorOf(() => loadConfig({ path, environment: {} }));
    expect(error.message).toContain('(root): unknown field "servre" (did you mean "server"?)');
    expect(error.message).toContain('server.base_url: expected a valid URL');
  });

  it('never prints a secret in a config error: secret fields by kind, keys inside objects masked, URL passwords hidden', () => {
    const key = 'sk-live-0123456789abcdefABCDEF';
    const path = write(
      'secret-errors.yaml',
      [
        'server:',
        '  api_key: 12345678901234567890',
        `  base_url: "http://admin:${key}@bad host:8000/v1"`,
        `judge: [{ api_key: "${key}" }]`,
        `run: { out: { token: "${key}" } }`,
      ].join('\n'),
    );
    const error = errorOf(() => loadConfig({ path, environment: {} }));
    expect(error.message).toContain(
      'server.api_key: expected string, got a number (not shown: a secret field)',
    );
    expect(error.message).toContain('server.base_url: expected a valid URL');
    expect(error.message).toContain('http://admin:[redacted]@bad host');
    expect(error.message).toMatch(/judge: .*a list \(\[\{"api_key":"\[redacted\]"\}\]\)/);
    expect(error.message).toContain('run.out: expected string, got an object ({"token":"[redacted]"})');
    expect(error.message).not.toContain('1234567890');
    expect(error.message).not.toContain(key);
  });

  it('names what a pattern field accepts, not "a valid regex"', () => {
    const path = write(
      'pattern.yaml',
      'server:\n  api_key_env: 1-KEY\ntrain:\n  reference: { model: base, device: gpu }\n',
    );
    const error = errorOf(() => loadConfig({ path, environment: {} }));
    expect(error.message).toContain('server.api_key_env: must match /^[A-Za-z_][A-Za-z0-9_]*$/, got "1-KEY"');
    expect(error.message).toContain('train.reference.device: expected auto, cpu, cuda or cuda:N, got "gpu"');
    expect(error.message).not.toContain('valid regex');
  });

  it('reads secrets from the environment and reports them for redaction', () => {
    const path = write('e.yaml', 'server:\n  provider: openai\n  api_key: ${MY_KEY}\n');
    const loaded = loadConfig({ path, environment: { MY_KEY: 'sk-test-123456' } });
    expect(loaded.apiKey).toBe('sk-test-123456');
    expect(loaded.secrets).toContain('sk-test-123456');
    const viaEnvName = loadConfig({
      object: { server: { api_key_env: 'OTHER_KEY' } },
      environment: { OTHER_KEY: 'sk-other-999' },
    });
    expect(viaEnvName.apiKey).toBe('sk-other-999');
  });

  it('treats judge API keys like server.api_key: read from the environment and redacted, also when written literally', () => {
    const server = (extra: Record<string, unknown>) => ({
      provider: 'openai',
      base_url: 'http://127.0.0.1:9/v1',
      model: 'judge',
      ...extra,
    });
    const loaded = loadConfig({
      object: {
        judge: {
          id: 'panel',
          server: server({ api_key_env: 'JUDGE_KEY' }),
          settings: { judges: [{ server: { provider: 'openai', apiKey: 'sk-member-literal' } }] },
        },
        group_judge: { id: 'group', server: server({ api_key: 'sk-group-literal' }) },
      },
      environment: { JUDGE_KEY: 'sk-judge-from-env' },
    });
    expect(loaded.config.judge?.server?.api_key).toBe('sk-judge-from-env');
    expect(loaded.secrets).toEqual(
      expect.arrayContaining(['sk-judge-from-env', 'sk-member-literal', 'sk-group-literal']),
    );
    expect(loaded.config.judge?.weight).toBe(1);
    expect(() =>
      loadConfig({
        object: { group_judge: { id: 'group', server: server({ api_key_env: 'NOPE' }) } },
        environment: {},
      }),
    ).toThrow(/group_judge\.server\.api_key_env: environment variable "NOPE" is not set/);
  });

  it('names the variable when a referenced secret is missing', () => {
    const path = write('f.yaml', 'server:\n  api_key: ${MISSING_KEY}\n');
    expect(() => loadConfig({ path, environment: {} })).toThrow(
      /server\.api_key: environment variable "MISSING_KEY" is not set/,
    );
    expect(() => loadConfig({ object: { server: { api_key_env: 'NOPE' } }, environment: {} })).toThrow(
      /server\.api_key_env: environment variable "NOPE" is not set/,
    );
  });

  it('reports unreadable and malformed files clearly', () => {
    expect(() => loadConfig({ path: join(dir, 'missing.yaml') })).toThrow(/Cannot read config file/);
    expect(() => loadConfig({ path: write('g.json', '{"env": ') })).toThrow(/is not valid JSON/);
    expect(() => loadConfig({ path: write('h.toml', 'x = 1') })).toThrow(/allowed: \.yaml, \.yml, \.json/);
  });

  it("reads the seed's tasks.task_file as the tasks env, refused beside its own file, kept for another env", () => {
    const seed = loadConfig({
      path: write('seed-tasks.yaml', 'tasks:\n  task_file: ./my_tasks.json\n'),
    }).config;
    expect(seed.env.name).toBe('tasks');
    // Relative to the config file's folder, wherever shears runs.
    expect(seed.env.settings).toMatchObject({ file: join(dir, 'my_tasks.json') });
    const withEnv = loadConfig({
      object: { env: { name: 'tasks', group_size: 2 }, tasks: { task_file: 't.jsonl' } },
    }).config;
    expect(withEnv.env).toMatchObject({ name: 'tasks', group_size: 2, settings: { file: 't.jsonl' } });
    // Another env keeps it for its own tasks-file setting, filled in when the env is created
    // (config-folder.e2e.test.ts), or refused there by an env that takes no rows.
    const otherEnv = loadConfig({ object: { env: { name: 'swe' }, tasks: { task_file: 't.jsonl' } } }).config;
    expect(otherEnv.env).toMatchObject({ name: 'swe', settings: {} });
    expect(otherEnv.tasks).toEqual({ task_file: 't.jsonl' });
    const twoFiles = errorOf(() =>
      loadConfig({ object: { env: { settings: { file: 'a.jsonl' } }, tasks: { task_file: 'b.jsonl' } } }),
    );
    expect(twoFiles.message).toMatch(/env\.settings\.file is set too/);
    expect(errorOf(() => loadConfig({ object: { tasks: { file: 'x' } } })).message).toMatch(
      /tasks: unknown field "file"; allowed: task_file/,
    );
  });

  it('generates a JSON Schema with every section for editor completion', () => {
    const schema = configJsonSchema() as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['env', 'server', 'sandbox', 'run', 'api', 'evaluate', 'train', 'plugins']),
    );
    expect(schema.properties.env?.properties).toHaveProperty('group_size');
  });
});

describe('parseArgs', () => {
  it('maps flags onto config fields per command and rejects unknown flags with a suggestion', () => {
    const args = parsed(['process', '--env', 'demo', '--groups=2', '--out', 'runs/x.jsonl']);
    expect(args.overrides).toEqual({
      'env.name': { text: 'demo', flag: '--env' },
      'run.groups': { text: '2', flag: '--groups' },
      'run.out': { text: 'runs/x.jsonl', flag: '--out' },
    });
    // evaluate writes evaluate.out: its --out sets that, not run.out (which evaluate never reads).
    expect(parsed(['evaluate', '--out', 'e.jsonl']).overrides).toEqual({
      'evaluate.out': { text: 'e.jsonl', flag: '--out' },
    });
    expect(() => parsed(['process', '--gropus', '2'])).toThrow(
      /unknown option '--gropus' \(Did you mean --groups\?\)/,
    );
    expect(() => parsed(['process', '--groups'])).toThrow(/option '--groups <N>' argument missing/);
    expect(() => parsed(['process', '--env.group_size'])).toThrow(/--env.group_size needs a value/);
  });
});

/** Every path the schema types as an open record of unknown values (plugin settings), found by walking it. */
function unknownRecordPaths(node: z.ZodType = shearsConfigSchema, path = ''): string[] {
  let current = node as z.ZodType & { def: { type: string; innerType?: z.ZodType; valueType?: z.ZodType } };
  while (['optional', 'default', 'prefault', 'nullable'].includes(current.def.type))
    current = current.def.innerType as typeof current;
  if (current.def.type === 'record')
    return (current.def.valueType as typeof current).def.type === 'unknown' ? [path] : [];
  if (current.def.type !== 'object') return [];
  return Object.entries((current as unknown as z.ZodObject).shape).flatMap(([key, child]) =>
    unknownRecordPaths(child as z.ZodType, path ? `${path}.${key}` : key),
  );
}

/** Fields a section needs before its settings validate. */
const SIBLINGS: Record<string, Record<string, string>> = {
  judge: { 'judge.id': 'rubric' },
  'judge.server': { 'judge.server.provider': 'openai', 'judge.server.model': 'j' },
  group_judge: { 'group_judge.id': 'group' },
  'group_judge.server': { 'group_judge.server.provider': 'openai', 'group_judge.server.model': 'j' },
  'loop.evaluation': { 'loop.evaluation.every_steps': '1', 'loop.evaluation.env.name': 'tasks' },
  'loop.safety': { 'loop.safety.capability.name': 'tasks' },
};

describe('command-line values of settings typed unknown', () => {
  const paths = unknownRecordPaths();

  it('finds every plugin-settings field of the schema', () => {
    expect(paths.sort()).toEqual(
      [
        'env.settings',
        'server.settings',
        'sandbox.settings',
        'judge.settings',
        'judge.server.settings',
        'group_judge.settings',
        'group_judge.server.settings',
        'loop.evaluation.env.settings',
        'loop.safety.capability.settings',
      ].sort(),
    );
  });

  // Each value as a config file would type it (YAML), or text where YAML would misread a flag value.
  const cases: Array<[text: string, expected: unknown]> = [
    ['1', 1],
    ['-2.5', -2.5],
    ['true', true],
    ['false', false],
    ['null', null],
    ['["count-lines"]', ['count-lines']],
    ['[a, 2, true]', ['a', 2, true]],
    ['{maxTurns: 1, only: [x]}', { maxTurns: 1, only: ['x'] }],
    ['"1"', '1'],
    ["'007'", '007'],
    ['abc', 'abc'],
    ['', ''],
    ['Note: x', 'Note: x'],
    ['- item', '- item'],
    ['a #b', 'a #b'],
    ['#1 task', '#1 task'],
    ['*alias', '*alias'],
    ['http://127.0.0.1:8000/v1', 'http://127.0.0.1:8000/v1'],
  ];

  for (const path of paths) {
    it(`--${path}.<key> VALUE has the type it would have in YAML`, () => {
      const siblings = Object.entries(SIBLINGS)
        .filter(([prefix]) => path.startsWith(`${prefix}.`))
        .reduce((all, [, fields]) => Object.assign(all, fields), {} as Record<string, string>);
      for (const [text, expected] of cases) {
        const overrides = { ...siblings, [`${path}.key`]: { text, flag: `--${path}.key` } };
        const { config } = loadConfig({ overrides, environment: {} });
        expect(
          valueAtPath(config, [...path.split('.'), 'key']),
          `--${path}.key ${JSON.stringify(text)}`,
        ).toEqual(expected);
      }
      // A nested path inside settings, and a whole settings object.
      const nested = loadConfig({ overrides: { ...siblings, [`${path}.a.b`]: '3' }, environment: {} });
      expect(valueAtPath(nested.config, [...path.split('.'), 'a', 'b'])).toBe(3);
      const whole = loadConfig({ overrides: { ...siblings, [path]: '{x: [1, 2]}' }, environment: {} });
      expect(valueAtPath(whole.config, path.split('.'))).toEqual({ x: [1, 2] });
      // A flow value that does not parse is refused, naming the flag.
      expect(() =>
        loadConfig({
          overrides: { ...siblings, [`${path}.key`]: { text: '[a, ', flag: `--${path}.key` } },
          environment: {},
        }),
      ).toThrow(new RegExp(`--${path.replace(/\./g, '\\.')}\\.key: "\\[a, " is not a valid YAML flow value`));
    });
  }

  it('types schema fields by the schema, lists as flow or comma lists, and refuses what does not fit', () => {
    const { config } = loadConfig({
      overrides: {
        'env.toolsets.enabled': '[web, file]',
        'env.toolsets.disabled': 'search, debugging',
        'env.action_policy': '{commands: {deny: [rm]}}',
        'server.model': '1.5',
        'train.trainer.command': '[python, "train.py"]',
      },
      environment: {},
    });
    expect(config.env.toolsets).toEqual({ enabled: ['web', 'file'], disabled: ['search', 'debugging'] });
    expect(config.env.action_policy).toEqual({ commands: { deny: ['rm'] } });
    expect(config.server.model).toBe('1.5');
    expect(config.train.trainer?.command).toEqual(['python', 'train.py']);
    expect(() => loadConfig({ overrides: { 'env.toolsets.enabled': '{a: 1}' }, environment: {} })).toThrow(
      /env\.toolsets\.enabled: expected array/,
    );
    expect(() => loadConfig({ overrides: { 'env.group_size': '2x' }, environment: {} })).toThrow(
      /env\.group_size: expected number, got "2x"/,
    );
    expect(schemaAtPath('env.settings.only')?.def.type).toBe('unknown');
  });
});

describe('committed JSON Schema', () => {
  it('matches the config schema (regenerate with: pnpm shears schema > packages/cli/shears.schema.json)', async () => {
    const { readFileSync } = await import('node:fs');
    const committed = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'shears.schema.json'), 'utf8'),
    ) as unknown;
    expect(committed).toEqual(configJsonSchema());
  });
});
