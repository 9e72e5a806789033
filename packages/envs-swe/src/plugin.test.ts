import { createRegistry, silentLogger } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin from './plugin.js';

const create = (settings: Record<string, unknown>) =>
  plugin.envs!.swe!.create(settings, { registry: createRegistry(), logger: silentLogger });

describe('the swe env from a config file', () => {
  it('takes grading settings and refuses unknown or malformed ones, naming them', () => {
    expect(() =>
      create({ tasks: 'bundled', grading: { poolSize: 2, maxFileBytes: 1_000_000 } }),
    ).not.toThrow();
    expect(() => create({ tasks: 'bundled', grading: { poolsize: 2 } })).toThrow(
      /grading: .*poolsize.*\(valid keys: poolSize, limits, maxTreeBytes/,
    );
    expect(() => create({ tasks: 'bundled', grading: { poolSize: -1 } })).toThrow(/grading\.poolSize/);
    expect(() => create({ tasks: 'bundled', grading: { limits: { memory: 1 } } })).toThrow(/grading\.limits/);
    expect(() =>
      create({ tasks: 'bundled', grading: { limits: { diskMb: 512 }, diskLimitMode: 'tmpfs' } }),
    ).not.toThrow();
    expect(() => create({ tasks: 'bundled', grading: { diskLimitMode: 'loop' } })).toThrow(
      /grading\.diskLimitMode/,
    );
  });
});
