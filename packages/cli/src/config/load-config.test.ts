import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@shears/core';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArgs } from '../args.js';
import { configJsonSchema } from '../commands/schema.js';
import { loadConfig } from './load-config.js';

const dir = mkdtempSync(join(tmpdir(), 'shears-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
  it('fills every section with defaults when there is no file', () => {
    const { config } = loadConfig({ environment: {} });
    expect(config.env).toMatchObject({ name: 'demo', group_size: 4 });
    expect(config.server.provider).toBe('scripted');
    expect(config.run.out).toBe('runs/shears.jsonl');
  });

  it('reads YAML and lets dotted flags override it, typed by the schema', () => {
    const path = write('a.yaml', 'env:\n  name: demo\n  group_size: 2\nrun:\n  report: true\n');
    const args = parseArgs([
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
  it('maps short flags onto config fields and rejects unknown flags with the list', () => {
    const args = parseArgs(['process', '--env', 'demo', '--groups=2', '--out', 'runs/x.jsonl']);
    expect(args.overrides).toEqual({ 'env.name': 'demo', 'run.groups': '2', 'run.out': 'runs/x.jsonl' });
    expect(() => parseArgs(['process', '--gropus', '2'])).toThrow(
      /Unknown flag --gropus \(allowed: .*--groups/,
    );
    expect(() => parseArgs(['process', '--groups'])).toThrow(/--groups needs a value/);
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
