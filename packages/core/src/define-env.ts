// The high-level way to write an env: `defineEnv({ name, tasks, prompt, files, tools, reward })`
// returns a plugin manifest (the module's default export) whose one env is built on the
// low-level EnvV1 contract. Tasks are rows (an array, a JSONL/JSON/CSV file, or an (async)
// iterable); each row's fields reach the prompt template, the files placed in the sandbox and the
// reward. `tool({ name, description, parameters, run })` makes a typed function a tool: its JSON
// Schema comes from the zod schema, the agent loop validates the arguments before `run`, and a
// throw becomes the error result the model sees.
import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ChatMessage } from './contracts/chat.js';
import type { EnvItem, EnvV1, RewardContext, RewardResult, RolloutView } from './contracts/env.js';
import type { SandboxSpec } from './contracts/sandbox.js';
import type { ToolContext, ToolOutput, ToolV1 } from './contracts/tool.js';
import { ConfigError, EnvError, InvalidArgumentError } from './errors.js';
import { safeParseJson } from './json.js';
import { importOptionalPackage } from './optional-package.js';
import { definePlugin, definePluginEntry, type PluginManifest, type Registry } from './registry.js';
import type { ScriptedChatRequest, ScriptedReply } from './test/scripted-server.js';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface ToolDefinition<TParameters extends z.ZodObject> {
  name: string;
  description: string;
  /** The arguments, as a zod object: the model's JSON Schema is derived from it. */
  parameters: TParameters;
  toolset?: string;
  /**
   * Runs with the parsed, validated arguments. A string is what the model sees; any other value
   * is shown as JSON. A throw becomes the tool's error result (the model sees the message).
   */
  run(args: z.output<TParameters>, context: ToolContext): unknown;
}

/** A typed function as a tool (see ToolDefinition). */
export function tool<TParameters extends z.ZodObject>(
  definition: ToolDefinition<TParameters>,
): ToolV1<z.output<TParameters>> {
  const name = definition?.name;
  if (typeof name !== 'string' || !TOOL_NAME.test(name))
    throw new InvalidArgumentError({
      argument: 'name',
      value: name,
      message: `tool(): name ${JSON.stringify(name)} is not a tool name (1-64 letters, digits, "_" or "-")`,
    });
  // Duck-typed, not `instanceof`: a pack may load its own copy of zod.
  if (
    (definition.parameters as { _zod?: { def?: { type?: unknown } } } | undefined)?._zod?.def?.type !==
    'object'
  )
    throw new InvalidArgumentError({
      argument: 'parameters',
      value: definition.parameters,
      message: `tool "${name}": parameters must be a zod object schema (z.object({ ... })), got ${definition.parameters === undefined ? 'nothing' : typeof definition.parameters}`,
    });
  if (typeof definition.run !== 'function')
    throw new InvalidArgumentError({
      argument: 'run',
      value: definition.run,
      message: `tool "${name}": run must be a function`,
    });
  return {
    specificationVersion: 'v1',
    name,
    description: definition.description,
    inputSchema: definition.parameters as unknown as z.ZodType<z.output<TParameters>>,
    ...(definition.toolset ? { toolset: definition.toolset } : {}),
    async execute(args, context): Promise<ToolOutput | string> {
      const result = await definition.run(args, context);
      if (typeof result === 'string') return result;
      if (isToolOutput(result)) return result;
      return result === undefined ? '' : (JSON.stringify(result) ?? String(result));
    },
  };
}

function isToolOutput(value: unknown): value is ToolOutput {
  return typeof value === 'object' && value !== null && typeof (value as ToolOutput).content === 'string';
}

/** A task row: any fields; `id` (when given) names the task. */
export type EnvRow = Record<string, unknown>;

/** Where the rows come from: a list, a file (path or URL: .jsonl, .json, .csv) or an (async) iterable. */
export type TaskSource<TRow extends EnvRow> =
  | readonly TRow[]
  | string
  | URL
  | Iterable<TRow>
  | AsyncIterable<TRow>;

/** What a reward sees: the rollout's sandbox and the rollout, with a reader for the sandbox's files. */
export interface EnvRewardContext extends RewardContext {
  rollout: RolloutView;
  /** The text of a file in the sandbox (relative to the workdir), or undefined when there is none. */
  read(path: string): Promise<string | undefined>;
}

export interface EnvDefinition<TRow extends EnvRow> {
  /** The env's name (`env.name` in a config, `--env` on the command line) and the plugin's id. */
  name: string;
  description?: string;
  /** The task rows. A relative file path resolves against the working directory. */
  tasks: TaskSource<TRow>;
  /** The prompt: a template whose `{field}` is the row's field, or a function of the row. */
  prompt: string | ((row: TRow) => string);
  /** A system message before the prompt (template or function, as `prompt`). */
  system?: string | ((row: TRow) => string);
  /** Built-in tools by registry name (`terminal`, `read_file`, …) and the env's own tools. */
  tools?: ReadonlyArray<string | ToolV1>;
  /** Files written into each rollout's sandbox before the agent starts: path → text or bytes. */
  files?: (row: TRow) => Record<string, string | Uint8Array>;
  /** Shell commands run in the sandbox after the files are written. */
  setup?: (row: TRow) => string[];
  /** The most turns a rollout may take. */
  maxTurns?: number;
  /**
   * The reward: a number, a boolean (1 or 0) or a full RewardResult. A throw marks the rollout
   * failed (kept out of the group's statistics), rather than scoring it 0.
   */
  reward(row: TRow, context: EnvRewardContext): unknown;
  /** A scripted policy that plays the tasks when `server.provider` is `scripted` (no model). */
  demoPolicy?: () => (request: ScriptedChatRequest) => ScriptedReply | Promise<ScriptedReply>;
}

interface RowItem<TRow extends EnvRow> extends EnvItem {
  row: TRow;
}

/** What the CLI knows of an env made by defineEnv (the pack's manifest, plus its env's name). */
export type EnvPack = PluginManifest & { readonly env: string };

const TASK_FORMATS = '.jsonl, .json or .csv';

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

async function readRowsFile(source: string | URL, name: string): Promise<EnvRow[]> {
  const path = source instanceof URL ? fileURLToPath(source) : resolve(source);
  const shown = source instanceof URL ? path : source;
  const extension = extname(path).toLowerCase();
  if (!['.jsonl', '.ndjson', '.json', '.csv'].includes(extension))
    throw new ConfigError({
      message: `env "${name}": tasks file ${shown}: cannot read ${extension ? `"${extension}" files` : 'a file without an extension'}; give a ${TASK_FORMATS} file, a list of rows or an (async) iterable`,
      issues: [{ path: 'tasks', message: 'unsupported task file format', value: shown }],
    });
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new ConfigError({
      message: `env "${name}": cannot read tasks file ${shown}${shown !== path ? ` (${path})` : ''}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      issues: [{ path: 'tasks', message: 'cannot read', value: shown }],
    });
  }
  if (extension === '.csv') {
    const { parse } = await importOptionalPackage('csv-parse', () => import('csv-parse/sync'), {
      usedBy: `a CSV tasks file (env "${name}")`,
      field: 'tasks',
    });
    try {
      return parse(text, { columns: true, skip_empty_lines: true, trim: true }) as EnvRow[];
    } catch (error) {
      throw new ConfigError({
        message: `env "${name}": tasks file ${shown}: ${(error as Error).message}`,
        issues: [{ path: 'tasks', message: 'not valid CSV', value: shown }],
      });
    }
  }
  const rows: unknown[] = [];
  if (extension === '.json') {
    const parsed = safeParseJson(text, { source: shown });
    if (!parsed.success) throw new ConfigError({ message: `env "${name}": ${parsed.error.message}` });
    if (!Array.isArray(parsed.value))
      throw new ConfigError({
        message: `env "${name}": tasks file ${shown}: a .json tasks file holds an array of rows, got ${describe(parsed.value)}`,
      });
    rows.push(...parsed.value);
  } else {
    for (const [index, line] of text.split('\n').entries()) {
      if (line.trim() === '') continue;
      const parsed = safeParseJson(line, { source: `${shown} line ${index + 1}` });
      if (!parsed.success) throw new ConfigError({ message: `env "${name}": ${parsed.error.message}` });
      rows.push(parsed.value);
    }
  }
  return rows as EnvRow[];
}

async function readRows(source: unknown, name: string): Promise<EnvRow[]> {
  if (typeof source === 'string' || source instanceof URL) return readRowsFile(source, name);
  if (Array.isArray(source)) return [...source];
  if (source && typeof source === 'object' && (Symbol.asyncIterator in source || Symbol.iterator in source)) {
    const rows: EnvRow[] = [];
    for await (const row of source as AsyncIterable<EnvRow>) rows.push(row);
    return rows;
  }
  throw new ConfigError({
    message: `env "${name}": tasks must be a list of rows, a ${TASK_FORMATS} file path, or an (async) iterable of rows; got ${describe(source)}`,
  });
}

/** Fills `{field}` from the row; a field the row lacks is an error naming it. */
function renderTemplate(template: string, row: EnvRow, where: string, envId: string): string {
  return template.replace(/\{([A-Za-z_][\w.-]*)\}/g, (_, field: string) => {
    if (!Object.hasOwn(row, field))
      throw new EnvError({
        envId,
        message: `${where}: the template names {${field}}, which the row does not have (its fields: ${Object.keys(row).join(', ') || 'none'})`,
      });
    const value = row[field];
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

function toRewardResult(value: unknown, where: string, envId: string): RewardResult {
  if (typeof value === 'boolean') return { score: value ? 1 : 0, success: value };
  if (typeof value === 'number' && Number.isFinite(value)) return { score: value };
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RewardResult).score === 'number' &&
    Number.isFinite((value as RewardResult).score)
  )
    return value as RewardResult;
  throw new EnvError({
    envId,
    message: `${where}: the reward returned ${value === undefined ? 'nothing' : JSON.stringify(value)}; return a number, a boolean or { score, ... }`,
  });
}

/** The built-in and own tools of an env, by name; two of one name are refused naming both. */
async function resolveTools(
  name: string,
  entries: ReadonlyArray<string | ToolV1>,
  registry: Registry,
): Promise<ToolV1[]> {
  const owner = (toolName: string) =>
    registry
      .plugins()
      .find((plugin) => plugin.id !== name && plugin.tools && Object.hasOwn(plugin.tools, toolName))?.id;
  const byName = new Map<string, string>();
  const tools: ToolV1[] = [];
  const add = (found: ToolV1, from: string) => {
    const earlier = byName.get(found.name);
    if (earlier)
      throw new ConfigError({
        message: `env "${name}": two tools are named "${found.name}": ${earlier} and ${from}; rename the env's own tool or drop the built-in from tools`,
        issues: [{ path: 'tools', message: 'tool name clash', value: found.name }],
      });
    byName.set(found.name, from);
    tools.push(found);
  };
  for (const [index, entry] of entries.entries()) {
    if (typeof entry === 'string') {
      if (!registry.has('tools', entry))
        throw new ConfigError({
          message: `env "${name}": tools[${index}]: no built-in tool "${entry}" (available: ${registry.list('tools').join(', ') || 'none'}; a plugin's tools are known once it is loaded)`,
          issues: [{ path: `tools[${index}]`, message: 'unknown tool', value: entry }],
        });
      const created = await registry.create('tools', entry, {});
      for (const one of Array.isArray(created) ? created : [created])
        add(one, `the built-in tool "${one.name}" (plugin "${owner(entry) ?? 'unknown'}")`);
      continue;
    }
    if (!entry || typeof entry !== 'object' || typeof entry.execute !== 'function')
      throw new ConfigError({
        message: `env "${name}": tools[${index}] is ${describe(entry)}; give a built-in tool's name or a tool made with tool({ ... })`,
        issues: [{ path: `tools[${index}]`, message: 'not a tool', value: entry }],
      });
    const builtin = owner(entry.name);
    if (builtin)
      throw new ConfigError({
        message: `env "${name}": its own tool "${entry.name}" has the name of the built-in tool "${entry.name}" (plugin "${builtin}"); rename the env's tool (a built-in is offered by naming it in tools)`,
        issues: [{ path: `tools[${index}]`, message: 'tool name clash', value: entry.name }],
      });
    add(entry, `the env's own tool "${entry.name}"`);
  }
  return tools;
}

/**
 * An env from rows, a prompt template, tools, files and a reward (see EnvDefinition), as a plugin
 * manifest: `export default defineEnv({...})`, then `shears process --plugins ./env.js --env <name>`.
 * Its settings are `seed` (which row comes first) and `tasks` (a tasks file in place of the
 * definition's rows: `--tasks FILE`).
 */
export function defineEnv<TRow extends EnvRow>(definition: EnvDefinition<TRow>): EnvPack {
  const name = definition?.name;
  if (typeof name !== 'string' || !/^[A-Za-z0-9][\w.-]*$/.test(name))
    throw new InvalidArgumentError({
      argument: 'name',
      value: name,
      message: `defineEnv(): name ${JSON.stringify(name)} is not an env name (letters, digits, ".", "_" or "-")`,
    });
  const where = `env "${name}"`;
  for (const field of ['prompt', 'reward'] as const)
    if (definition[field] === undefined)
      throw new InvalidArgumentError({
        argument: field,
        value: undefined,
        message: `${where}: "${field}" is required`,
      });
  const known = new Set([
    'name',
    'description',
    'tasks',
    'prompt',
    'system',
    'tools',
    'files',
    'setup',
    'maxTurns',
    'reward',
    'demoPolicy',
  ]);
  const unknown = Object.keys(definition).filter((key) => !known.has(key));
  if (unknown.length)
    throw new InvalidArgumentError({
      argument: unknown[0]!,
      value: unknown,
      message: `${where}: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `"${key}"`).join(', ')} (fields: ${[...known].join(', ')})`,
    });
  const settings = z.strictObject({
    seed: z.int().min(0).default(0).describe('Which row comes first'),
    tasks: z
      .string()
      .min(1)
      .optional()
      .describe("A tasks file (.jsonl, .json, .csv) in place of the env's own rows (--tasks)"),
  });
  const template = (value: string | ((row: TRow) => string), row: TRow, id: string, field: string) =>
    typeof value === 'function'
      ? value(row)
      : renderTemplate(value, row, `${where}, task "${id}", ${field}`, name);

  async function create(
    options: z.output<typeof settings>,
    registry: Registry,
  ): Promise<EnvV1<RowItem<TRow>>> {
    const rows = (await readRows(options.tasks ?? definition.tasks, name)) as TRow[];
    if (rows.length === 0)
      throw new ConfigError({
        message: `${where}: no tasks (the rows are empty)`,
        issues: [{ path: 'tasks', message: 'empty', value: [] }],
      });
    const seen = new Set<string>();
    const items: RowItem<TRow>[] = rows.map((row, index) => {
      if (typeof row !== 'object' || row === null || Array.isArray(row))
        throw new ConfigError({
          message: `${where}: task row ${index + 1} is ${describe(row)}, not an object of fields`,
        });
      const id = row.id === undefined ? `${name}-${index + 1}` : String(row.id);
      if (seen.has(id)) throw new ConfigError({ message: `${where}: two task rows have the id "${id}"` });
      seen.add(id);
      return { id, prompt: template(definition.prompt, row, id, 'prompt'), row };
    });
    const tools = await resolveTools(name, definition.tools ?? [], registry);
    let cursor = options.seed % items.length;
    const env: EnvV1<RowItem<TRow>> & { demoPolicy?: () => unknown } = {
      specificationVersion: 'v1',
      id: name,
      async nextItem() {
        const item = items[cursor % items.length]!;
        cursor++;
        return item;
      },
      buildMessages(item): ChatMessage[] {
        const system = definition.system && template(definition.system, item.row, item.id, 'system');
        return [
          ...(system ? [{ role: 'system' as const, content: system }] : []),
          { role: 'user', content: item.prompt },
        ];
      },
      tools: () => tools,
      sandboxSpec(item): SandboxSpec {
        const files = definition.files?.(item.row);
        const setup = definition.setup?.(item.row);
        return {
          ...(files ? { files } : {}),
          ...(setup ? { setup } : {}),
          labels: { 'shears.env': name, 'shears.task': item.id },
        };
      },
      ...(definition.maxTurns ? { budget: () => ({ maxTurns: definition.maxTurns! }) } : {}),
      async computeReward(item, rollout, context) {
        const read = async (path: string): Promise<string | undefined> => {
          try {
            return new TextDecoder().decode(await context.sandbox.readFile(path, { signal: context.signal }));
          } catch (error) {
            // Every sandbox names a missing file "no such file" (the sandbox conformance suite).
            if (/no such file/i.test((error as Error).message)) return undefined;
            throw error;
          }
        };
        const value = await definition.reward(item.row, { ...context, rollout, read });
        return toRewardResult(value, `${where}, task "${item.id}"`, name);
      },
      async evalItems() {
        return items;
      },
      ...(definition.demoPolicy ? { demoPolicy: definition.demoPolicy } : {}),
    };
    return env;
  }

  const manifest = definePlugin({
    id: name,
    ...(definition.description ? { description: definition.description } : {}),
    envs: {
      [name]: definePluginEntry({
        settings,
        ...(definition.description ? { description: definition.description } : {}),
        settingHints: { file: 'a tasks file is env.settings.tasks (--tasks)' },
        taskFileSetting: 'tasks',
        create: (options, context) => create(options, context.registry),
      }),
    },
  });
  return Object.assign(manifest, { env: name });
}
