// What the model is offered and where it runs, as the config shapes it: tools from loaded plugins
// added to the env (`env.tools`), the toolset selection (`env.toolsets`, resolved in the
// registry's toolset table plus each tool's own `toolset`), and the sandbox the env asks for.
// Each is checked when a group starts, before any sandbox: an unknown toolset, a selection that
// leaves the model no tool, or an env image a local/ssh sandbox cannot run is a ConfigError.
import {
  BUILTIN_DISTRIBUTIONS,
  ConfigError,
  type EnvItem,
  type EnvV1,
  type Logger,
  mergeToolToolsets,
  NoSuchEntryError,
  type Registry,
  resolveToolset,
  selectTools,
  type ToolsetDefinition,
  type ToolV1,
} from '@shears/core';
import { closestName } from '@shears/core/internal';
import type { EnvPlan, ToolRequest } from '../plan/env-plan.js';
import { checkSandboxSpec, createFromConfig } from './compose.js';

/** `env.tools`: each entry a tool id or a toolset name from the loaded plugins, created with its settings. */
export async function createExtraTools(
  registry: Registry,
  requests: readonly ToolRequest[],
): Promise<ToolV1[]> {
  const table = registry.toolsets();
  const tools: ToolV1[] = [];
  for (const { id, settings, field } of requests) {
    let names: string[];
    if (registry.has('tools', id)) names = [id];
    else if (Object.hasOwn(table, id)) {
      try {
        names = resolveToolset(id, table);
      } catch (cause) {
        if (!NoSuchEntryError.isInstance(cause)) throw cause;
        throw new ConfigError({ message: `${field}: toolset "${id}": ${cause.message}`, cause });
      }
      const missing = names.filter((name) => !registry.has('tools', name));
      if (missing.length > 0)
        throw new ConfigError({
          message: `${field}: toolset "${id}" (from ${registry.toolsetOwner(id) ?? 'a plugin'}) names ${missing.map((name) => `"${name}"`).join(', ')}, which no loaded plugin registers as a tool; add the package that provides it to "plugins"`,
          issues: [{ path: field, message: 'toolset names unregistered tools', value: id }],
        });
    } else {
      const known = [...registry.list('tools'), ...Object.keys(table)];
      const suggestion = closestName(id, known);
      throw new ConfigError({
        message: `${field}: no tool or toolset "${id}" in the loaded plugins${suggestion ? ` (did you mean "${suggestion}"?)` : ''} (tools: ${registry.list('tools').join(', ') || 'none'}; toolsets: ${Object.keys(table).sort().join(', ') || 'none'}); add the package that provides it to "plugins"`,
        issues: [{ path: field, message: 'unknown tool or toolset', value: id }],
      });
    }
    for (const name of names) {
      const created = await createFromConfig(registry, 'tools', name, field, settings, `${field}.settings`);
      tools.push(...(Array.isArray(created) ? created : [created]));
    }
  }
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name))
      throw new ConfigError({
        message: `env.tools: tool "${tool.name}" is added twice (once by name, once through a toolset?); list it once`,
        issues: [{ path: 'env.tools', message: 'duplicate tool', value: tool.name }],
      });
    seen.add(tool.name);
  }
  return tools;
}

function describeTools(tools: readonly ToolV1[]): string {
  return tools.length === 0
    ? 'no tools'
    : tools.map((tool) => (tool.toolset ? `${tool.name} (toolset ${tool.toolset})` : tool.name)).join(', ');
}

/** The toolset names the config uses exist, and the selection leaves the model at least one tool. */
function checkOfferedTools(
  tools: readonly ToolV1[],
  plan: Pick<EnvPlan, 'name' | 'toolsets'>,
  table: Readonly<Record<string, ToolsetDefinition>>,
): void {
  const toolsets = plan.toolsets;
  if (!toolsets) return;
  const envName = plan.name;
  const merged = mergeToolToolsets(tools, table);
  const known = Object.keys(merged).sort();
  const checkName = (name: string, path: string, context = '') => {
    if (name === 'all' || name === '*' || Object.hasOwn(merged, name)) return;
    const suggestion = closestName(name, known);
    throw new ConfigError({
      message: `${path}: unknown toolset "${name}"${context}${suggestion ? ` (did you mean "${suggestion}"?)` : ''} (toolsets: ${[...known, 'all'].join(', ')}; a plugin's toolsets are known once it is in "plugins")`,
      issues: [{ path, message: 'unknown toolset', value: name }],
    });
  };
  for (const field of ['enabled', 'disabled'] as const)
    for (const [index, name] of (toolsets[field] ?? []).entries())
      checkName(name, `env.toolsets.${field}[${index}]`);
  const offered = (enabled: readonly string[] | null) =>
    selectTools(tools, { enabled, disabled: toolsets.disabled ?? [], toolsets: table });
  const hint =
    'add tools from a plugin with env.tools (e.g. env.tools: [web]), or select a toolset the env has';
  if (toolsets.distribution) {
    const distribution = BUILTIN_DISTRIBUTIONS[toolsets.distribution]!;
    const entries = Object.entries(distribution.toolsets);
    for (const [name] of entries)
      checkName(name, 'env.toolsets.distribution', ` (named by distribution "${toolsets.distribution}")`);
    // A draw holds the toolsets with random() * 100 < percent, or else the most likely one; it
    // offers no tool when every toolset that would give one can be left out.
    const empty = new Set(entries.filter(([name]) => offered([name]).length === 0).map(([name]) => name));
    let likeliest = entries[0]!;
    for (const entry of entries) if (entry[1] > likeliest[1]) likeliest = entry;
    const givers = entries.filter(([name]) => !empty.has(name));
    const canBeEmpty =
      givers.length === 0 ||
      (givers.every(([, percent]) => percent < 100) &&
        (entries.some(([name, percent]) => empty.has(name) && percent > 0) || empty.has(likeliest[0])));
    if (canBeEmpty)
      throw new ConfigError({
        message: `env.toolsets.distribution: "${toolsets.distribution}" can draw only ${[...empty].join(' or ')}, which leaves env ${envName} no tool (it offers ${describeTools(tools)}); ${hint}`,
        issues: [
          { path: 'env.toolsets.distribution', message: 'can leave no tool', value: toolsets.distribution },
        ],
      });
    return;
  }
  if (offered(toolsets.enabled ?? null).length === 0) {
    const what = [
      toolsets.enabled ? `enabled [${toolsets.enabled.join(', ')}]` : '',
      toolsets.disabled ? `disabled [${toolsets.disabled.join(', ')}]` : '',
    ]
      .filter(Boolean)
      .join(' and ');
    throw new ConfigError({
      message: `env.toolsets: ${what} leaves env ${envName} no tool (it offers ${describeTools(tools)}); ${hint}`,
      issues: [{ path: 'env.toolsets', message: 'no tool left', value: toolsets }],
    });
  }
}

/**
 * The env as the run uses it: `env.tools` appended to its own tools, the toolset selection
 * checked on every group's tools, and the sandbox it asks for checked against the provider.
 */
export function configureEnv<TItem extends EnvItem>(
  env: EnvV1<TItem>,
  options: {
    plan: Pick<EnvPlan, 'name' | 'toolsets'>;
    extraTools: readonly ToolV1[];
    toolsets: Readonly<Record<string, ToolsetDefinition>>;
    sandboxProvider: string;
    logger: Logger;
  },
): EnvV1<TItem> {
  const { plan, extraTools } = options;
  const warned = new Set<string>();
  const tools = (item: TItem): ToolV1[] => {
    const own = env.tools(item);
    const clash = extraTools.find((tool) => own.some((mine) => mine.name === tool.name));
    if (clash)
      throw new ConfigError({
        message: `env.tools: env ${plan.name} already offers a tool named "${clash.name}"; remove it from env.tools`,
        issues: [{ path: 'env.tools', message: 'tool already offered by the env', value: clash.name }],
      });
    const all = [...own, ...extraTools];
    checkOfferedTools(all, plan, options.toolsets);
    return all;
  };
  const sandboxSpec = (item: TItem) => {
    const spec = env.sandboxSpec?.(item);
    checkSandboxSpec(options.sandboxProvider, spec, {
      envName: plan.name,
      warn: (message) => options.logger.warn(message),
      warned,
    });
    return spec;
  };
  return new Proxy(env, {
    get(target, key) {
      if (key === 'tools') return tools;
      if (key === 'sandboxSpec') return sandboxSpec;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
