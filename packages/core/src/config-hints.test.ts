import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closestName, describeValue, valueAtPath } from './config-hints.js';
import { parsePluginSettings } from './plugin-settings.js';

describe('config hints', () => {
  it('suggests the closest allowed name only when it is close enough', () => {
    expect(closestName('enable', ['enabled', 'allowlist', 'resolver'])).toBe('enabled');
    expect(closestName('group_sise', ['group_size', 'seed'])).toBe('group_size');
    expect(closestName('xyz', ['enabled', 'allowlist'])).toBeUndefined();
    expect(closestName('Enabled', ['enabled'])).toBe('enabled');
    expect(closestName('ALLOWLIST', ['allowlist'])).toBeUndefined();
    expect(closestName('ALLOWLIST', ['allowlist'], { ignoreCase: true })).toBe('allowlist');
  });

  it('describes values shortly and reads values at a path', () => {
    expect(describeValue(undefined)).toBe('nothing');
    expect(describeValue('x'.repeat(100))).toBe(JSON.stringify(`${'x'.repeat(57)}...`));
    expect(describeValue([1, 2])).toBe('a list ([1,2])');
    expect(describeValue(() => 1)).toBe('a function');
    expect(valueAtPath({ a: [{ b: 3 }] }, ['a', 0, 'b'])).toBe(3);
    expect(valueAtPath({ a: 1 }, ['a', 'b'])).toBeUndefined();
  });

  it('never shows a secret: secret-named fields by kind, inside objects masked, URL passwords hidden', () => {
    expect(describeValue('sk-abcdefghijklmnop', ['server', 'api_key'])).toBe(
      'a string of 19 characters (not shown: a secret field)',
    );
    expect(describeValue(42, ['headers', 'Authorization', 0])).toBe('a number (not shown: a secret field)');
    expect(describeValue({ nested: { apiKey: 'sk-x' }, model: 'm' })).toBe(
      'an object ({"nested":{"apiKey":"[redacted]"},"model":"m"})',
    );
    // Past the 57 characters shown, too: the password is hidden before the text is cut.
    expect(describeValue(`https://user:${'p'.repeat(80)}@example.com/x`)).toBe(
      JSON.stringify(`https://user:[redacted]@example.com/x`),
    );
    expect(describeValue(['see https://u:secret@h/'])).toBe('a list (["see https://u:[redacted]@h/"])');
    // Names that only contain a secret word are not secret fields: an env variable's name.
    expect(describeValue('OPENAI_API_KEY', ['server', 'api_key_env'])).toBe('"OPENAI_API_KEY"');
  });

  it("keeps a plugin setting's secret out of its settings error", () => {
    const schema = z.object({ endpoint: z.object({ api_key: z.string(), retries: z.number() }) });
    let message = '';
    try {
      parsePluginSettings(schema, { endpoint: { api_key: 1234567890123, retries: 'x' } }, 'my-env');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('endpoint.api_key');
    expect(message).toContain('a number (not shown: a secret field)');
    expect(message).toContain('got "x"');
    expect(message).not.toContain('1234567890123');
  });
});
