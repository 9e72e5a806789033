// The Atropos chapter's `atropos_config.yaml` layout (the seed, §10.5.3): `model`, `training`,
// `trajectory_collection`, `judge: { model, n_judges }` and `tasks.task_file`. Each key is mapped
// onto shears' own setting, the mapping is printed once, and what cannot mean anything here is
// refused saying why (a GGUF quantization for training). A key the chapter does not have is
// refused by the schema as any unknown key is.
import { ConfigError } from '@shears/core';
import { closestName, describeValue } from '@shears/core/internal';

/** The chapter's tool names → shears toolsets (hermes-agent's): what each offers the model. */
const CHAPTER_TOOLSETS: Readonly<Record<string, string>> = {
  python_exec: 'terminal',
  file_ops: 'file',
  web_search: 'web',
  web_extract: 'web',
  terminal: 'terminal',
  file: 'file',
  web: 'web',
};

const SECTIONS = {
  model: ['base_model', 'quantization'],
  training: ['max_steps', 'batch_size', 'learning_rate'],
  trajectory_collection: ['n_workers', 'max_steps_per_trajectory', 'tools'],
} as const;

export interface AtroposMapping {
  /** One line per chapter key: `model.base_model → train.reference.model`. */
  lines: string[];
  /** shears field → the chapter key it came from (for messages about the value). */
  aliases: Record<string, string>;
}

type Raw = Record<string, unknown>;

function isRecord(value: unknown): value is Raw {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The chapter's layout is in use: one of its own sections, or a judge given as { model, n_judges }. */
function usesChapterLayout(raw: Raw): boolean {
  const judge = raw.judge;
  return (
    Object.keys(SECTIONS).some((section) => raw[section] !== undefined) ||
    (isRecord(judge) && judge.id === undefined && ('model' in judge || 'n_judges' in judge))
  );
}

function refuse(path: string, message: string, value: unknown): never {
  throw new ConfigError({ message: `${path}: ${message}`, issues: [{ path, message, value }] });
}

/** The shears section object at `keys`, created when absent. */
function section(raw: Raw, ...keys: string[]): Raw {
  let node = raw;
  for (const key of keys) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (!isRecord(next)) refuse(keys.join('.'), `expected a mapping, got ${describeValue(next)}`, next);
    node = node[key] as Raw;
  }
  return node;
}

/**
 * Rewrites the chapter's keys in `raw` (a config file's content) into shears' own; returns the
 * mapping, or undefined when the file does not use the chapter's layout.
 */
export function translateAtroposLayout(raw: Raw): AtroposMapping | undefined {
  if (!usesChapterLayout(raw)) return undefined;
  const lines: string[] = [];
  const aliases: Record<string, string> = {};
  const set = (from: string, to: string[], value: unknown, note = '') => {
    const field = to.join('.');
    const parent = section(raw, ...to.slice(0, -1));
    const key = to.at(-1)!;
    if (parent[key] !== undefined && parent[key] !== value)
      refuse(
        from,
        `it sets ${field}, which the config also sets (to ${describeValue(parent[key])}); keep one of the two`,
        value,
      );
    parent[key] = value;
    aliases[field] = from;
    lines.push(`  ${from} → ${field}${note}`);
  };
  for (const [name, keys] of Object.entries(SECTIONS)) {
    const given = raw[name];
    if (given === undefined) continue;
    if (!isRecord(given)) refuse(name, `expected a mapping, got ${describeValue(given)}`, given);
    for (const key of Object.keys(given))
      if (!(keys as readonly string[]).includes(key)) {
        const suggestion = closestName(key, keys);
        refuse(
          `${name}.${key}`,
          `unknown field of the Atropos chapter's ${name} section${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; allowed: ${keys.join(', ')}`,
          given[key],
        );
      }
  }
  const model = raw.model as Raw | undefined;
  if (model) {
    const quantization = model.quantization;
    if (quantization !== undefined && quantization !== null && quantization !== 'none') {
      const gguf = typeof quantization === 'string' && /^(i?q\d|f16|f32|bf16)/i.test(quantization);
      refuse(
        'model.quantization',
        gguf
          ? `"${quantization}" is a GGUF (llama.cpp) quantization: a storage format for running a model, not for training it (its weights are packed integers that no gradient updates). shears trains the model's own weights (train.reference; LoRA with train.reference.lora_rank); remove model.quantization, or set it to none`
          : `${describeValue(quantization)}: shears trains the model's own weights and quantizes none (train.reference; LoRA with train.reference.lora_rank); remove model.quantization, or set it to none`,
        quantization,
      );
    }
    if (model.base_model !== undefined)
      set(
        'model.base_model',
        ['train', 'reference', 'model'],
        model.base_model,
        ' (the trainer starts from it and serves it to the env workers)',
      );
  }
  const training = raw.training as Raw | undefined;
  if (training) {
    if (training.max_steps !== undefined)
      set('training.max_steps', ['train', 'reference', 'steps'], training.max_steps);
    if (training.batch_size !== undefined)
      set('training.batch_size', ['train', 'reference', 'batch_size'], training.batch_size);
    if (training.learning_rate !== undefined) {
      // YAML 1.1 readers take 1e-5 as text; the chapter means the number.
      const rate = training.learning_rate;
      const number = typeof rate === 'string' && rate.trim() !== '' ? Number(rate) : rate;
      set('training.learning_rate', ['train', 'reference', 'lr'], Number.isFinite(number) ? number : rate);
    }
  }
  const collection = raw.trajectory_collection as Raw | undefined;
  if (collection) {
    if (collection.n_workers !== undefined)
      set('trajectory_collection.n_workers', ['train', 'workers'], collection.n_workers, ' (env workers)');
    if (collection.max_steps_per_trajectory !== undefined)
      set(
        'trajectory_collection.max_steps_per_trajectory',
        ['env', 'max_turns'],
        collection.max_steps_per_trajectory,
        ' (agent turns per rollout)',
      );
    if (collection.tools !== undefined) {
      const tools = collection.tools;
      if (!Array.isArray(tools))
        refuse(
          'trajectory_collection.tools',
          `expected a list of tool names, got ${describeValue(tools)}`,
          tools,
        );
      const toolsets: string[] = [];
      for (const [index, tool] of tools.entries()) {
        const toolset = typeof tool === 'string' ? CHAPTER_TOOLSETS[tool] : undefined;
        if (!toolset) {
          const suggestion =
            typeof tool === 'string' ? closestName(tool, Object.keys(CHAPTER_TOOLSETS)) : undefined;
          refuse(
            `trajectory_collection.tools[${index}]`,
            `no tool ${describeValue(tool)} here${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; known: ${Object.entries(
              CHAPTER_TOOLSETS,
            )
              .map(([name, set]) => `${name} (toolset ${set})`)
              .join(', ')}`,
            tool,
          );
        }
        if (!toolsets.includes(toolset)) toolsets.push(toolset);
      }
      set(
        'trajectory_collection.tools',
        ['env', 'toolsets', 'enabled'],
        toolsets,
        ` [${toolsets.join(', ')}] (${tools.map((tool) => `${tool} → ${CHAPTER_TOOLSETS[tool as string]}`).join(', ')}: the env's tools in those toolsets are offered)`,
      );
    }
  }
  const judge = raw.judge;
  if (isRecord(judge) && judge.id === undefined && ('model' in judge || 'n_judges' in judge)) {
    for (const key of Object.keys(judge))
      if (key !== 'model' && key !== 'n_judges')
        refuse(
          `judge.${key}`,
          "unknown field of the Atropos chapter's judge section; allowed: model, n_judges (or write shears' own judge: { id, server, settings })",
          judge[key],
        );
    const count = judge.n_judges ?? 1;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 16)
      refuse('judge.n_judges', `expected a whole number from 1 to 16, got ${describeValue(count)}`, count);
    if (typeof judge.model !== 'string' || judge.model === '')
      refuse(
        'judge.model',
        `expected the judge model's name (e.g. gpt-4o), got ${describeValue(judge.model)}`,
        judge.model,
      );
    const model = judge.model;
    raw.judge = {
      id: count === 1 ? 'rubric' : 'panel',
      server: {
        provider: 'openai',
        base_url: 'https://api.openai.com/v1',
        model,
        api_key_env: 'OPENAI_API_KEY',
      },
      settings:
        count === 1
          ? {}
          : {
              judges: Array.from({ length: count }, (_, index) => ({ id: `judge-${index + 1}` })),
              aggregation: count >= 3 ? 'trimmed_mean' : 'mean',
            },
    };
    aliases['judge.server.model'] = 'judge.model';
    lines.push(
      `  judge.model, judge.n_judges → judge: ${count === 1 ? 'one rubric judge' : `a panel of ${count} rubric judges (${count >= 3 ? 'trimmed mean: the outliers dropped' : 'mean'})`} on ${model} at https://api.openai.com/v1 (key from OPENAI_API_KEY; write shears' judge.server for another endpoint)`,
    );
  }
  for (const name of Object.keys(SECTIONS)) delete raw[name];
  const tasks = raw.tasks;
  const envName = isRecord(raw.env) ? raw.env.name : undefined;
  if (isRecord(tasks) && tasks.task_file !== undefined)
    lines.push(
      envName === undefined || envName === 'tasks'
        ? '  tasks.task_file → env: { name: tasks, settings: { file } } (the tasks env)'
        : `  tasks.task_file → the rows of env "${String(envName)}" (its tasks-file setting, e.g. a defineEnv env's tasks)`,
    );
  return { lines, aliases };
}
