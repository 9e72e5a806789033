// Toolsets and toolset distributions (hermes-agent toolsets.py / toolset_distributions.py):
// named sets of tools with includes, enable/disable filters, and a distribution sampled once
// per group.
import { InvalidArgumentError, NoSuchEntryError } from './errors.js';

export interface ToolsetDefinition {
  description?: string;
  tools: readonly string[];
  includes?: readonly string[];
}

/** name -> toolset -> inclusion probability in percent. */
export interface ToolsetDistribution {
  description?: string;
  toolsets: Record<string, number>;
}

export const BUILTIN_TOOLSETS: Readonly<Record<string, ToolsetDefinition>> = {
  web: { description: 'Web search and extraction', tools: ['web_search', 'web_extract'] },
  search: { description: 'Web search only', tools: ['web_search'] },
  terminal: { description: 'Shell commands and background processes', tools: ['terminal', 'process'] },
  file: {
    description: 'Reading, writing, patching and searching files',
    tools: ['read_file', 'write_file', 'patch', 'search_files'],
  },
  debugging: {
    description: 'Terminal plus web and file tools',
    tools: ['terminal', 'process'],
    includes: ['web', 'file'],
  },
};

export const BUILTIN_DISTRIBUTIONS: Readonly<Record<string, ToolsetDistribution>> = {
  default: { toolsets: { web: 100, terminal: 100, file: 100 } },
  development: { toolsets: { terminal: 80, file: 80, web: 30 } },
  minimal: { toolsets: { web: 100 } },
  terminal_only: { toolsets: { terminal: 100, file: 100 } },
  terminal_web: { toolsets: { terminal: 100, file: 100, web: 100 } },
  science: { toolsets: { web: 94, terminal: 94, file: 94 } },
};

/**
 * Expands a toolset into its tool names (recursive through `includes`; `all` / `*` is every
 * toolset). A toolset reached twice contributes nothing the second time (cycles are harmless).
 */
export function resolveToolset(
  name: string,
  toolsets: Readonly<Record<string, ToolsetDefinition>> = BUILTIN_TOOLSETS,
  visited: Set<string> = new Set(),
): string[] {
  if (name === 'all' || name === '*') {
    const every = new Set<string>();
    for (const key of Object.keys(toolsets))
      for (const tool of resolveToolset(key, toolsets, visited)) every.add(tool);
    return [...every].sort();
  }
  if (visited.has(name)) return [];
  const definition = toolsets[name];
  if (!definition)
    throw new NoSuchEntryError({ kind: 'toolset', id: name, available: Object.keys(toolsets).sort() });
  visited.add(name);
  const tools = new Set(definition.tools);
  for (const include of definition.includes ?? [])
    for (const tool of resolveToolset(include, toolsets, visited)) tools.add(tool);
  return [...tools].sort();
}

export interface SelectToolsOptions {
  enabled?: readonly string[] | null;
  disabled?: readonly string[];
  toolsets?: Readonly<Record<string, ToolsetDefinition>>;
}

/** Tool names for enabled toolsets (all when null), with disabled toolsets subtracted at the end. */
export function selectToolNames(options: SelectToolsOptions = {}): string[] {
  const toolsets = options.toolsets ?? BUILTIN_TOOLSETS;
  const enabled = options.enabled ?? Object.keys(toolsets);
  const names = new Set<string>();
  for (const toolset of enabled) for (const tool of resolveToolset(toolset, toolsets)) names.add(tool);
  for (const toolset of options.disabled ?? [])
    for (const tool of resolveToolset(toolset, toolsets)) names.delete(tool);
  return [...names].sort();
}

/**
 * Samples toolsets from a distribution: each is included independently with its probability;
 * when nothing is selected, the most likely toolset is chosen. `random` returns [0, 1).
 */
export function sampleToolsets(
  distribution: string | ToolsetDistribution,
  options: { distributions?: Readonly<Record<string, ToolsetDistribution>>; random?: () => number } = {},
): string[] {
  const table = options.distributions ?? BUILTIN_DISTRIBUTIONS;
  const resolved = typeof distribution === 'string' ? table[distribution] : distribution;
  if (!resolved)
    throw new NoSuchEntryError({
      kind: 'distribution',
      id: String(distribution),
      available: Object.keys(table).sort(),
    });
  const random = options.random ?? Math.random;
  const entries = Object.entries(resolved.toolsets);
  if (entries.length === 0) {
    throw new InvalidArgumentError({
      argument: 'distribution',
      value: distribution,
      message: 'A toolset distribution needs at least one toolset',
    });
  }
  const chosen = entries.filter(([, percent]) => random() * 100 < percent).map(([name]) => name);
  if (chosen.length > 0) return chosen;
  let best = entries[0]!;
  for (const entry of entries) if (entry[1] > best[1]) best = entry;
  return [best[0]];
}
