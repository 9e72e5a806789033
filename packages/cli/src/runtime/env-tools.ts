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
  type SandboxSpec,
  selectTools,
  type ToolsetDefinition,
  type ToolV1,
} from '@shears/core';
import { closestName } from '@shears/core/internal';
import { z } from 'zod';
import type { EnvPlan } from '../plan/env-plan.js';

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
 * What the built-in sandboxes without containers cannot honour from a SandboxSpec (an env's
 * image, resource limits, network policy) or from `sandbox.image`. Third-party providers are
 * trusted to refuse what they cannot do.
 */
export const SANDBOX_SPEC_UNSUPPORTED: Readonly<Record<string, readonly ('image' | 'limits' | 'network')[]>> =
  {
    local: ['image', 'limits', 'network'],
    ssh: ['image', 'limits', 'network'],
  };

export const SANDBOX_NATURE: Readonly<Record<string, string>> = {
  local: 'is a temp directory on this machine, with its network and no resource limits',
  ssh: 'is a directory on the ssh host, with its network and no resource limits',
};

/**
 * Checks the sandbox an env asks for (`env.sandboxSpec(item)`) against what the provider can
 * give, before any sandbox starts: an image, or `network: none`, that a local/ssh sandbox cannot
 * honour is a ConfigError (the task would run in the wrong place, or with network it must not
 * have); resource limits it cannot enforce are a warning, once.
 */
function checkSandboxSpec(
  providerId: string,
  spec: SandboxSpec | undefined,
  context: { envName: string; warn: (message: string) => void; warned: Set<string> },
): void {
  const unsupported = SANDBOX_SPEC_UNSUPPORTED[providerId];
  if (!spec || !unsupported) return;
  const where = `the ${providerId} sandbox ${SANDBOX_NATURE[providerId]}`;
  if (spec.image && unsupported.includes('image')) {
    throw new ConfigError({
      message: `sandbox.provider: env ${context.envName} runs its tasks in the container image "${spec.image}", but ${where}; use sandbox.provider: docker`,
      issues: [{ path: 'sandbox.provider', message: "cannot run the env's image", value: providerId }],
    });
  }
  if (spec.network === 'none' && unsupported.includes('network')) {
    throw new ConfigError({
      message: `sandbox.provider: env ${context.envName} asks for a sandbox without network, but ${where}; use sandbox.provider: docker`,
      issues: [{ path: 'sandbox.provider', message: 'cannot cut the network', value: providerId }],
    });
  }
  const limits = Object.entries(spec.limits ?? {}).filter(([, value]) => value !== undefined);
  if (limits.length > 0 && unsupported.includes('limits') && !context.warned.has('limits')) {
    context.warned.add('limits');
    context.warn(
      `env ${context.envName} asks for resource limits (${limits.map(([key, value]) => `${key} ${value}`).join(', ')}) that the ${providerId} sandbox does not enforce; use sandbox.provider: docker to enforce them`,
    );
  }
}

/** The property names and required ones of an object JSON Schema; undefined when it names none. */
function objectShape(schema: unknown): { properties: string[]; required: string[] } | undefined {
  const node = schema as { properties?: Record<string, unknown>; required?: unknown } | undefined;
  if (!node?.properties || typeof node.properties !== 'object') return undefined;
  const properties = Object.keys(node.properties).sort();
  if (properties.length === 0) return undefined;
  const required = Array.isArray(node.required) ? node.required.map(String).sort() : [];
  return { properties, required };
}

const checkedTools = new WeakSet<ToolV1>();

/**
 * A tool that shows the model one JSON Schema (`jsonSchema`) and validates its arguments with
 * another (`inputSchema`) has every call the model makes by the first refused by the second: the
 * run would be a row of tool errors and zeros. Refused when the group starts, naming both sides.
 */
function checkToolSchemas(tools: readonly ToolV1[], envName: string): void {
  for (const tool of tools) {
    if (checkedTools.has(tool) || !tool.jsonSchema) continue;
    checkedTools.add(tool);
    const shown = objectShape(tool.jsonSchema);
    const validated = objectShape(z.toJSONSchema(tool.inputSchema, { io: 'input', unrepresentable: 'any' }));
    if (!shown || !validated) continue;
    const unknown = shown.properties.filter((name) => !validated.properties.includes(name));
    const missing = validated.required.filter((name) => !shown.properties.includes(name));
    const unshownRequired = validated.required.filter((name) => !shown.required.includes(name));
    if (unknown.length === 0 && missing.length === 0 && unshownRequired.length === 0) continue;
    const problems = [
      unknown.length
        ? `the model is shown ${unknown.map((name) => `"${name}"`).join(', ')}, which the code does not take`
        : '',
      missing.length
        ? `the code requires ${missing.map((name) => `"${name}"`).join(', ')}, which the model is never shown`
        : '',
      unshownRequired.length && !missing.length
        ? `the code requires ${unshownRequired.map((name) => `"${name}"`).join(', ')}, which the model is told is optional`
        : '',
    ].filter(Boolean);
    throw new ConfigError({
      message: `tool "${tool.name}" of env ${envName}: its JSON Schema (jsonSchema, what the model is shown: ${shown.properties.join(', ')}) and the schema its arguments are validated with (inputSchema: ${validated.properties.join(', ')}) disagree: ${problems.join('; ')}. Every call the model makes would be refused as invalid arguments; derive one from the other (leave jsonSchema out to derive it from inputSchema)`,
      issues: [
        {
          path: 'env',
          message: `tool "${tool.name}": jsonSchema and inputSchema disagree`,
          value: tool.name,
        },
      ],
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
    checkToolSchemas(all, plan.name);
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
