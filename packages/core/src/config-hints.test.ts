import { describe, expect, it } from 'vitest';
import { closestName, describeValue, valueAtPath } from './config-hints.js';

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
});
