import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from './contracts/tool.js';
import { InvalidArgumentError, NoSuchEntryError } from './errors.js';
import {
  BUILTIN_DISTRIBUTIONS,
  mergeToolToolsets,
  resolveToolset,
  sampleToolsets,
  selectToolNames,
  selectTools,
  type ToolsetDefinition,
} from './toolsets.js';

/** A random source that returns these values in turn (then repeats the last). */
function sequence(...values: number[]): () => number {
  let index = 0;
  return () => values[Math.min(index++, values.length - 1)]!;
}

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** hermes-agent's toolsets as the tool plugins and the CLI plugin declare them (the kernel declares none). */
const HERMES: Record<string, ToolsetDefinition> = {
  web: { description: 'Web search and extraction', tools: ['web_search', 'web_extract'] },
  search: { description: 'Web search only', tools: ['web_search'] },
  terminal: { description: 'Shell commands and background processes', tools: ['terminal', 'process'] },
  file: { tools: ['read_file', 'write_file', 'patch', 'search_files'] },
  debugging: { tools: ['terminal', 'process'], includes: ['web', 'file'] },
};

function tool(name: string, toolset?: string) {
  return defineTool({
    name,
    description: name,
    inputSchema: z.object({}),
    execute: async () => '',
    ...(toolset !== undefined ? { toolset } : {}),
  });
}

describe('resolveToolset', () => {
  it('expands a leaf toolset and a composite one through its includes, sorted and without duplicates', () => {
    expect(resolveToolset('web', HERMES)).toEqual(['web_extract', 'web_search']);
    expect(resolveToolset('debugging', HERMES)).toEqual([
      'patch',
      'process',
      'read_file',
      'search_files',
      'terminal',
      'web_extract',
      'web_search',
      'write_file',
    ]);
    const table: Record<string, ToolsetDefinition> = {
      a: { tools: ['x', 'shared'] },
      b: { tools: ['shared', 'y'], includes: ['a'] },
    };
    expect(resolveToolset('b', table)).toEqual(['shared', 'x', 'y']);
  });

  it('survives include cycles, self-includes and diamonds, keeping every tool once', () => {
    const table: Record<string, ToolsetDefinition> = {
      ping: { tools: ['p'], includes: ['pong'] },
      pong: { tools: ['q'], includes: ['ping'] },
      self: { tools: ['s'], includes: ['self'] },
      top: { tools: [], includes: ['left', 'right'] },
      left: { tools: ['l'], includes: ['base'] },
      right: { tools: ['r'], includes: ['base'] },
      base: { tools: ['b'] },
    };
    expect(resolveToolset('ping', table)).toEqual(['p', 'q']);
    expect(resolveToolset('pong', table)).toEqual(['p', 'q']);
    expect(resolveToolset('self', table)).toEqual(['s']);
    expect(resolveToolset('top', table)).toEqual(['b', 'l', 'r']);
  });

  it('treats `all` and `*` as every toolset, also inside includes', () => {
    const every = [...new Set(Object.values(HERMES).flatMap((definition) => definition.tools))].sort();
    expect(resolveToolset('all', HERMES)).toEqual(every);
    expect(resolveToolset('*', HERMES)).toEqual(every);
    const table: Record<string, ToolsetDefinition> = {
      a: { tools: ['x'] },
      b: { tools: ['y'], includes: ['c'] },
      c: { tools: ['z'], includes: ['b'] },
      everything: { tools: [], includes: ['all'] },
    };
    expect(resolveToolset('everything', table)).toEqual(['x', 'y', 'z']);
  });

  it('names an unknown toolset, and the toolset that includes it, listing the available ones', () => {
    const unknown = thrown(() => resolveToolset('termnal', HERMES));
    expect(NoSuchEntryError.isInstance(unknown)).toBe(true);
    expect((unknown as Error).message).toBe(
      'No toolset "termnal" (available: debugging, file, search, terminal, web)',
    );
    const table: Record<string, ToolsetDefinition> = { dev: { tools: ['t'], includes: ['shel'] } };
    expect((thrown(() => resolveToolset('dev', table)) as Error).message).toBe(
      'No toolset "shel" (available: dev). It is included by toolset "dev"',
    );
    // Names of Object.prototype members are not toolsets.
    expect((thrown(() => resolveToolset('constructor', HERMES)) as Error).message).toContain(
      'No toolset "constructor"',
    );
  });
});

describe('the kernel declares no toolsets', () => {
  it('knows no toolset name without a table: plugins declare them (registry.toolsets())', () => {
    expect((thrown(() => resolveToolset('web')) as Error).message).toBe(
      'No toolset "web" (available: none registered)',
    );
    // A tool's own `toolset` field still makes it a member without any table.
    expect(
      selectTools([tool('terminal', 'terminal'), tool('submit')], { enabled: ['terminal'] }).map(
        (entry) => entry.name,
      ),
    ).toEqual(['terminal', 'submit']);
  });
});

describe('selectToolNames', () => {
  it('offers every toolset when nothing is enabled, and nothing for an empty list', () => {
    expect(selectToolNames({ toolsets: HERMES })).toEqual(resolveToolset('all', HERMES));
    expect(selectToolNames({ toolsets: HERMES, enabled: null })).toEqual(resolveToolset('all', HERMES));
    expect(selectToolNames({ toolsets: HERMES, enabled: [] })).toEqual([]);
    expect(selectToolNames({ toolsets: HERMES, enabled: ['web', 'terminal'] })).toEqual([
      'process',
      'terminal',
      'web_extract',
      'web_search',
    ]);
  });

  it('subtracts disabled toolsets at the end, also from composites and shared tools', () => {
    // debugging includes web; disabling web removes its tools even though debugging was enabled.
    expect(selectToolNames({ toolsets: HERMES, enabled: ['debugging'], disabled: ['web'] })).toEqual([
      'patch',
      'process',
      'read_file',
      'search_files',
      'terminal',
      'write_file',
    ]);
    // search shares web_search with web: a strict subtraction takes it from web too (hermes' rule).
    expect(selectToolNames({ toolsets: HERMES, enabled: ['web'], disabled: ['search'] })).toEqual([
      'web_extract',
    ]);
    // Disabled with nothing enabled: every toolset minus the disabled ones.
    expect(selectToolNames({ toolsets: HERMES, disabled: ['terminal', 'web'] })).toEqual([
      'patch',
      'read_file',
      'search_files',
      'write_file',
    ]);
  });

  it('rejects an unknown enabled or disabled toolset by name', () => {
    expect(
      (thrown(() => selectToolNames({ toolsets: HERMES, enabled: ['web', 'wbe'] })) as Error).message,
    ).toContain('No toolset "wbe"');
    expect(
      (thrown(() => selectToolNames({ toolsets: HERMES, disabled: ['nope'] })) as Error).message,
    ).toContain('No toolset "nope"');
  });
});

describe('selectTools', () => {
  const terminal = tool('terminal', 'terminal');
  const search = tool('web_search', 'web');
  const myShell = tool('my_shell', 'terminal');
  const gitDiff = tool('git_diff', 'git');
  const submit = tool('submit');
  const all = [terminal, search, myShell, gitDiff, submit];
  const names = (tools: readonly { name: string }[]) => tools.map((entry) => entry.name);

  it("counts a tool's own toolset as membership, also through includes", () => {
    const merged = mergeToolToolsets(all, HERMES);
    expect(merged.terminal?.tools).toEqual(['terminal', 'process', 'my_shell']);
    expect(merged.git).toEqual({ tools: ['git_diff'] });
    expect(HERMES.terminal?.tools).toEqual(['terminal', 'process']);
    // debugging includes no terminal toolset, but a custom composite does: my_shell comes along.
    const toolsets = { ...HERMES, dev: { tools: [], includes: ['terminal', 'git'] } };
    expect(names(selectTools(all, { enabled: ['dev'], toolsets }))).toEqual([
      'terminal',
      'my_shell',
      'git_diff',
      'submit',
    ]);
  });

  it('always offers tools of no toolset, and removes disabled toolsets', () => {
    expect(names(selectTools(all, { toolsets: HERMES, enabled: ['web'] }))).toEqual(['web_search', 'submit']);
    expect(names(selectTools(all, { toolsets: HERMES, disabled: ['terminal'] }))).toEqual([
      'web_search',
      'git_diff',
      'submit',
    ]);
    expect(names(selectTools(all, { toolsets: HERMES, enabled: ['all'], disabled: ['git', 'web'] }))).toEqual(
      ['terminal', 'my_shell', 'submit'],
    );
    expect(names(selectTools(all, { toolsets: HERMES }))).toEqual(names(all));
  });
});

describe('sampleToolsets', () => {
  it('includes each toolset independently when random() * 100 is below its percentage', () => {
    const distribution = { toolsets: { terminal: 80, file: 80, web: 30 } };
    expect(sampleToolsets(distribution, { random: sequence(0.1, 0.9, 0.2) })).toEqual(['terminal', 'web']);
    expect(sampleToolsets(distribution, { random: sequence(0.79, 0.8, 0.3) })).toEqual(['terminal']);
    expect(sampleToolsets('default', { random: sequence(0.999) })).toEqual(['web', 'terminal', 'file']);
    expect(sampleToolsets('minimal', { random: sequence(0.5) })).toEqual(['web']);
  });

  it('falls back to the most likely toolset (the first of equals) when nothing was drawn', () => {
    expect(sampleToolsets('development', { random: sequence(0.99) })).toEqual(['terminal']);
    expect(
      sampleToolsets({ toolsets: { web: 10, file: 40, terminal: 40 } }, { random: sequence(0.5) }),
    ).toEqual(['file']);
    expect(sampleToolsets({ toolsets: { web: 0, file: 0 } }, { random: sequence(0) })).toEqual(['web']);
  });

  it('names an unknown distribution and lists the available ones', () => {
    const error = thrown(() => sampleToolsets('defualt'));
    expect(NoSuchEntryError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      `No distribution "defualt" (available: ${Object.keys(BUILTIN_DISTRIBUTIONS).sort().join(', ')})`,
    );
    expect((thrown(() => sampleToolsets('toString')) as Error).message).toContain(
      'No distribution "toString"',
    );
  });

  it('rejects an empty distribution and a probability outside 0–100, naming the toolset', () => {
    expect(InvalidArgumentError.isInstance(thrown(() => sampleToolsets({ toolsets: {} })))).toBe(true);
    expect((thrown(() => sampleToolsets({ toolsets: { web: 50, file: 150 } })) as Error).message).toBe(
      'Toolset "file" in the given toolset distribution has probability 150; expected a percentage from 0 to 100',
    );
    const notANumber = { toolsets: { web: Number.NaN } };
    expect((thrown(() => sampleToolsets(notANumber)) as Error).message).toContain('probability NaN');
  });

  it('checks every named toolset against the table before sampling, even one it would not draw', () => {
    const distribution = { toolsets: { web: 100, termnal: 1 } };
    // Without a table the names are not checked.
    expect(sampleToolsets(distribution, { random: sequence(0.5) })).toEqual(['web']);
    const error = thrown(() => sampleToolsets(distribution, { toolsets: HERMES, random: sequence(0.5) }));
    expect(NoSuchEntryError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      'No toolset "termnal" (available: debugging, file, search, terminal, web). It is named by the given toolset distribution',
    );
    expect(sampleToolsets({ toolsets: { all: 100 } }, { toolsets: HERMES })).toEqual(['all']);
  });
});
