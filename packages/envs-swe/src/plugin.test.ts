import { createRegistry } from '@shears/core';
import { describe, expect, it } from 'vitest';
import plugin from './plugin.js';

const create = (settings: Record<string, unknown>) =>
  createRegistry().use(plugin).create('envs', 'swe', settings);

describe('the swe env from a config file', () => {
  it('takes grading settings and refuses unknown or malformed ones, naming them', async () => {
    await expect(
      create({ tasks: 'bundled', grading: { poolSize: 2, maxFileBytes: 1_000_000 } }),
    ).resolves.toBeDefined();
    await expect(create({ tasks: 'bundled', grading: { poolsize: 2 } })).rejects.toThrow(
      /settings\.grading\.poolsize: unknown setting \(did you mean "poolSize"\?\); allowed: poolSize, limits, maxTreeBytes/,
    );
    await expect(create({ tasks: 'bundled', grading: { poolSize: -1 } })).rejects.toThrow(
      /settings\.grading\.poolSize: must be >= 0, got -1/,
    );
    await expect(create({ tasks: 'bundled', grading: { limits: { memory: 1 } } })).rejects.toThrow(
      /settings\.grading\.limits\.memory: unknown setting/,
    );
    await expect(
      create({ tasks: 'bundled', grading: { limits: { diskMb: 512 }, diskLimitMode: 'tmpfs' } }),
    ).resolves.toBeDefined();
    await expect(create({ tasks: 'bundled', grading: { diskLimitMode: 'loop' } })).rejects.toThrow(
      /settings\.grading\.diskLimitMode: got "loop"; allowed: "writable-layer", "tmpfs"/,
    );
  });

  it('refuses settings it used to drop or coerce silently: a task list that is not a string, a misspelt key, an unknown task id', async () => {
    await expect(create({ tasks: ['a'] })).rejects.toThrow(/settings\.tasks: expected string, got a list/);
    await expect(create({ partial_credit: true })).rejects.toThrow(
      /settings\.partial_credit: unknown setting \(did you mean "partialCredit"\?\)/,
    );
    await expect(create({ partialCredit: 'yes' })).rejects.toThrow(
      /settings\.partialCredit: expected boolean/,
    );
    await expect(create({ only: ['no-such-task'] })).rejects.toThrow(
      /only: no task "no-such-task" in bundled \(tasks: /,
    );
  });
});
