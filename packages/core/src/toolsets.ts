// Toolsets and toolset distributions (hermes-agent toolsets.py / toolset_distributions.py):
// named sets of tools with includes, enable/disable filters, and a distribution sampled once
// per group. Unlike hermes, which prints a warning and skips an unknown toolset name, every
// function here throws a NoSuchEntryError naming it: a typo would otherwise silently remove tools.
//
// The kernel defines no toolsets: each plugin declares its own in its manifest (`web` and
// `search` in @shears/tools-web, `terminal` in @shears/tools-terminal, `file` in
// @shears/tools-file, a third-party pack its own), and `registry.toolsets()` is the one table.
// A tool's own `toolset` field also makes it a member (mergeToolToolsets).
import type { ToolV1 } from './contracts/tool.js';
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
 * toolset). A toolset reached twice contributes nothing the second time (cycles and diamonds are
 * harmless). An unknown name, also one reached through `includes`, throws a NoSuchEntryError.
 */
export function resolveToolset(
  name: string,
  toolsets: Readonly<Record<string, ToolsetDefinition>> = {},
  visited: Set<string> = new Set(),
): string[] {
  return expandToolset(name, toolsets, visited, undefined);
}

function expandToolset(
  name: string,
  toolsets: Readonly<Record<string, ToolsetDefinition>>,
  visited: Set<string>,
  includedBy: string | undefined,
): string[] {
  if (name === 'all' || name === '*') {
    const every = new Set<string>();
    // One visited set for every branch (hermes copies it per branch): the union is the same,
    // since every visited toolset's tools reach the result, and toolsets that include `all`
    // cannot multiply the work.
    for (const key of Object.keys(toolsets))
      for (const tool of expandToolset(key, toolsets, visited, name)) every.add(tool);
    return [...every].sort();
  }
  if (visited.has(name)) return [];
  const definition = Object.hasOwn(toolsets, name) ? toolsets[name] : undefined;
  if (!definition)
    throw new NoSuchEntryError({
      kind: 'toolset',
      id: name,
      available: Object.keys(toolsets).sort(),
      ...(includedBy !== undefined ? { hint: `It is included by toolset "${includedBy}"` } : {}),
    });
  visited.add(name);
  const tools = new Set(definition.tools);
  for (const include of definition.includes ?? [])
    for (const tool of expandToolset(include, toolsets, visited, name)) tools.add(tool);
  return [...tools].sort();
}

export interface SelectToolsOptions {
  /** Toolsets to offer; null or absent: every toolset. */
  enabled?: readonly string[] | null;
  /** Toolsets whose tools are removed at the end, even when an enabled toolset includes them. */
  disabled?: readonly string[];
  /** Toolset definitions, usually `registry.toolsets()` (default: none). */
  toolsets?: Readonly<Record<string, ToolsetDefinition>>;
}

/** Tool names for enabled toolsets (all when null), with disabled toolsets subtracted at the end. */
export function selectToolNames(options: SelectToolsOptions = {}): string[] {
  const toolsets = options.toolsets ?? {};
  const enabled = options.enabled ?? Object.keys(toolsets);
  const names = new Set<string>();
  for (const toolset of enabled) for (const tool of resolveToolset(toolset, toolsets)) names.add(tool);
  for (const toolset of options.disabled ?? [])
    for (const tool of resolveToolset(toolset, toolsets)) names.delete(tool);
  return [...names].sort();
}

/**
 * The toolset table with every tool that declares a `toolset` added to that toolset (a new
 * toolset when the table has none of that name), as hermes merges registry tools into toolsets.
 */
export function mergeToolToolsets(
  tools: readonly ToolV1[],
  toolsets: Readonly<Record<string, ToolsetDefinition>> = {},
): Record<string, ToolsetDefinition> {
  const merged: Record<string, ToolsetDefinition> = { ...toolsets };
  for (const tool of tools) {
    if (tool.toolset === undefined) continue;
    const existing = Object.hasOwn(merged, tool.toolset) ? merged[tool.toolset] : undefined;
    if (existing?.tools.includes(tool.name)) continue;
    merged[tool.toolset] = existing
      ? { ...existing, tools: [...existing.tools, tool.name] }
      : { tools: [tool.name] };
  }
  return merged;
}

/**
 * The tools to offer for these enabled and disabled toolsets. A tool is offered when its name is
 * selected (its own `toolset` counts, see mergeToolToolsets); a tool that belongs to no toolset
 * at all (an env's own tool, such as a submit tool) is always offered.
 */
export function selectTools(tools: readonly ToolV1[], options: SelectToolsOptions = {}): ToolV1[] {
  const toolsets = mergeToolToolsets(tools, options.toolsets ?? {});
  const selected = new Set(selectToolNames({ ...options, toolsets }));
  const member = new Set(selectToolNames({ toolsets }));
  return tools.filter((tool) => selected.has(tool.name) || !member.has(tool.name));
}

/**
 * Samples toolsets from a distribution: each is included independently with its probability
 * (`random() * 100 < percent`); when nothing is selected, the most likely toolset is chosen (the
 * first of equals). `random` returns [0, 1). With `toolsets`, every toolset the distribution
 * names must exist there (checked before sampling, so a rarely drawn typo still fails at once).
 */
export function sampleToolsets(
  distribution: string | ToolsetDistribution,
  options: {
    distributions?: Readonly<Record<string, ToolsetDistribution>>;
    toolsets?: Readonly<Record<string, ToolsetDefinition>>;
    random?: () => number;
  } = {},
): string[] {
  const table = options.distributions ?? BUILTIN_DISTRIBUTIONS;
  const resolved =
    typeof distribution === 'string'
      ? Object.hasOwn(table, distribution)
        ? table[distribution]
        : undefined
      : distribution;
  if (!resolved)
    throw new NoSuchEntryError({
      kind: 'distribution',
      id: String(distribution),
      available: Object.keys(table).sort(),
    });
  const label = typeof distribution === 'string' ? `"${distribution}"` : 'given';
  const random = options.random ?? Math.random;
  const entries = Object.entries(resolved.toolsets);
  if (entries.length === 0) {
    throw new InvalidArgumentError({
      argument: 'distribution',
      value: distribution,
      message: `The ${label} toolset distribution needs at least one toolset`,
    });
  }
  for (const [name, percent] of entries) {
    if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
      throw new InvalidArgumentError({
        argument: 'distribution',
        value: distribution,
        message: `Toolset "${name}" in the ${label} toolset distribution has probability ${String(percent)}; expected a percentage from 0 to 100`,
      });
    }
    const known = options.toolsets;
    if (known && name !== 'all' && name !== '*' && !Object.hasOwn(known, name)) {
      throw new NoSuchEntryError({
        kind: 'toolset',
        id: name,
        available: Object.keys(known).sort(),
        hint: `It is named by the ${label} toolset distribution`,
      });
    }
  }
  const chosen = entries.filter(([, percent]) => random() * 100 < percent).map(([name]) => name);
  if (chosen.length > 0) return chosen;
  let best = entries[0]!;
  for (const entry of entries) if (entry[1] > best[1]) best = entry;
  return [best[0]];
}
