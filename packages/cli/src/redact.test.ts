import { describe, expect, it } from 'vitest';
import { loadConfig } from './config/load-config.js';
import { collectSecrets, createRedactor, isStrongSecret, weakSecretsWarning } from './redact.js';

const KEY = 'sk-proj-9fA8bC7dE6fG5hI4';

describe('collectSecrets', () => {
  it('finds secrets by the field that holds them, at any depth, and never ordinary settings', () => {
    const { config, apiKey } = loadConfig({
      object: {
        env: { settings: { github_token: 'ghp_abcdefghijklmnop1234', repo: 'acme/widgets' } },
        server: {
          provider: 'openai',
          base_url: 'https://alice:pa55-w0rd-xyz@llm.example.com/v1?api_key=q-secret-123456&region=eu',
          model: 'Qwen/Qwen3-8B',
          api_key_env: 'MY_KEY',
          settings: { headers: { Authorization: 'Bearer tok-1234567890abcdef', 'X-Trace': 'on' } },
        },
        sandbox: {
          provider: 'ssh',
          settings: { host: 'box', password: 'hunter2!Hunter2', privateKeyPath: '/k' },
        },
        api: { auth_token: 'api-token-0123456789' },
        judge: {
          id: 'rubric',
          server: {
            provider: 'openai',
            base_url: 'http://judge/v1',
            model: 'j',
            api_key: 'judge-key-0123456789',
          },
        },
        train: {
          trainer: { command: ['python'], env: { WANDB_API_KEY: 'wandb-0123456789abcdef', SEED: '7' } },
        },
      },
      environment: { MY_KEY: KEY },
    });
    const found = collectSecrets(config, { apiKey, environment: {} });
    const byValue = Object.fromEntries(found.map((secret) => [secret.value, secret.path]));
    expect(byValue).toMatchObject({
      ghp_abcdefghijklmnop1234: 'env.settings.github_token',
      'pa55-w0rd-xyz': 'server.base_url (URL password)',
      'q-secret-123456': 'server.base_url (URL parameter api_key)',
      'Bearer tok-1234567890abcdef': 'server.settings.headers.Authorization',
      'tok-1234567890abcdef': 'server.settings.headers.Authorization (credential)',
      'hunter2!Hunter2': 'sandbox.settings.password',
      'api-token-0123456789': 'api.auth_token',
      'judge-key-0123456789': 'judge.server.api_key',
      'wandb-0123456789abcdef': 'train.trainer.env.WANDB_API_KEY',
      [KEY]: 'server.api_key',
    });
    const values = found.map((secret) => secret.value);
    for (const visible of ['acme/widgets', 'Qwen/Qwen3-8B', 'on', '/k', 'box', 'http://judge/v1', '7', 'eu'])
      expect(values).not.toContain(visible);
    expect(values.some((value) => value.includes('llm.example.com'))).toBe(false);
  });

  it('treats a value from a secret-named environment variable as a secret wherever the config uses it, a strong one the config does not use too, and nothing else from the environment', () => {
    const environment = {
      GITHUB_TOKEN: 'ghp_zyxwvutsrqponm9876',
      BASE_URL: 'http://127.0.0.1:8000/v1',
      // Read by shears itself, not through the config: W&B, a web_search provider.
      WANDB_API_KEY: 'wandb-not-in-config-0123456789',
      BRAVE_API_KEY: 'BSAnotinconfig42xyz',
      SHORT_TOKEN: 'abc12',
      SEED: 'a-long-but-not-secret-value-123',
    };
    const { config } = loadConfig({
      object: {
        env: { settings: { clone: 'https://x:${GITHUB_TOKEN}@git.example.com/r.git' } },
        server: { base_url: '${BASE_URL}' },
      },
      environment,
    });
    const values = collectSecrets(config, { environment }).map((secret) => secret.value);
    const secrets = collectSecrets(config, { environment });
    expect(values).toContain('ghp_zyxwvutsrqponm9876');
    expect(values).toContain('wandb-not-in-config-0123456789');
    expect(values).toContain('BSAnotinconfig42xyz');
    expect(secrets.find((secret) => secret.value === 'BSAnotinconfig42xyz')?.path).toBe(
      '$BRAVE_API_KEY (environment)',
    );
    expect(values).not.toContain('http://127.0.0.1:8000/v1');
    expect(values).not.toContain('a-long-but-not-secret-value-123');
    // A weak value of a variable the config does not use is neither redacted nor warned about.
    expect(values).not.toContain('abc12');
    expect(createRedactor(secrets).weak).toEqual([]);
  });
});

describe('createRedactor', () => {
  it('replaces a strong secret inside any string of structured data and keeps the JSON valid', () => {
    const redact = createRedactor([{ path: 'server.api_key', value: KEY }]);
    const record = {
      finishedNaturally: true,
      reward: 1,
      messages: [{ role: 'tool', content: `OPENAI_API_KEY=${KEY}\nPATH=/bin` }],
      nested: { list: [KEY, 'fine'] },
    };
    const out = redact.value(record);
    expect(out).toEqual({
      finishedNaturally: true,
      reward: 1,
      messages: [{ role: 'tool', content: 'OPENAI_API_KEY=[redacted]\nPATH=/bin' }],
      nested: { list: ['[redacted]', 'fine'] },
    });
    expect(record.nested.list[0]).toBe(KEY); // a copy: the run's own data is untouched
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });

  it('never rewrites ordinary text or JSON literals for a weak secret, and says so', () => {
    for (const dummy of ['test', 'true', 'shell', 'null', '1234', 'sk-test']) {
      const redact = createRedactor([{ path: 'server.api_key', value: dummy }]);
      const record = {
        finishedNaturally: true,
        content: `You are a careful ${dummy} assistant.`,
        value: dummy,
        n: 1234,
      };
      expect(redact.value(record)).toEqual(record);
      expect(JSON.parse(JSON.stringify(redact.value(record)))).toEqual(record);
      expect(redact(`a careful ${dummy} assistant`)).toBe(`a careful ${dummy} assistant`);
      expect(weakSecretsWarning(redact)).toContain(
        `server.api_key (${dummy.length} characters): too short to tell from ordinary text`,
      );
    }
  });

  it('strips the userinfo of every URL in free text and keeps the rest of the URL', () => {
    const redact = createRedactor([]);
    expect(
      redact('connect to http://bob:s3cret@10.0.0.5:8000/v1 failed; see https://docs.example.com/x'),
    ).toBe('connect to http://[redacted]@10.0.0.5:8000/v1 failed; see https://docs.example.com/x');
  });

  it('calls keys and tokens strong and words weak', () => {
    for (const strong of [
      KEY,
      'ghp_abcdefghijklmnop1234',
      'correcthorsebatterystaple',
      'Passw0rd!',
      'secret-token-123',
    ])
      expect(isStrongSecret(strong), strong).toBe(true);
    for (const weak of ['test', 'true', 'shell', 'password', 'hunter2', 'changeme', 'sk-test'])
      expect(isStrongSecret(weak), weak).toBe(false);
  });
});
