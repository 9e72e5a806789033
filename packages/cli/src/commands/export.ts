// `shears export RUN.jsonl --format sft|dpo|grpo [--out FILE]`: a run's scored groups as the
// datasets the trainers users already run load directly (TRL's SFTTrainer, DPOTrainer and
// GRPOTrainer, through `datasets.load_dataset("json", …)`):
// - sft: `{messages, tools?}` per kept rollout (the conversation as the agent saw it);
// - dpo: `{prompt, chosen, rejected, tools?}` per pair (best vs worst rollout of a group, or all
//   pairs with a margin), the prompt being the conversation up to the first assistant turn;
// - grpo: `{prompt, task_id, task}` per task (the trainer samples its own completions; `task` is
//   the env's task row as JSON text, for the reward function).
// Every line of the file must be a scored group: anything else is named with its line number and
// nothing is written. The run file holds no tool definitions, so tool-calling rollouts exported
// without `--tools` are said to be rendered without them.
import { readFileSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import {
  InvalidArgumentError,
  type ScoredGroupRecord,
  safeParseJson,
  scoredGroupRecordSchema,
} from '@shears/core';
import { toDpoPairs, toSftRecords } from '@shears/grpo';
import { fileError, guardOutputs, writeOutputFile } from '../output/output-files.js';
import type { CommandContext } from '../session.js';

const FORMATS = ['sft', 'dpo', 'grpo'] as const;
type Format = (typeof FORMATS)[number];

/** Which options each format reads; any other is refused. */
const FORMAT_FLAGS: Record<Format, readonly string[]> = {
  sft: ['min-score', 'select', 'tools'],
  dpo: ['min-margin', 'pairs', 'tools'],
  grpo: [],
};

type Message = Record<string, unknown>;

type Given = Record<string, string | true | undefined>;

function numberFlag(given: Given, name: string): number | undefined {
  const value = given[name];
  if (value === undefined) return undefined;
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  if (!Number.isFinite(number))
    throw new InvalidArgumentError({
      argument: `--${name}`,
      message: `--${name} takes a number, not ${JSON.stringify(value)}`,
    });
  return number;
}

function choiceFlag<T extends string>(given: Given, name: string, choices: readonly T[]): T | undefined {
  const value = given[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !choices.includes(value as T))
    throw new InvalidArgumentError({
      argument: `--${name}`,
      message: `--${name} is one of ${choices.join(', ')}, not ${JSON.stringify(value)}`,
    });
  return value as T;
}

/** The groups of a run file, every line checked; a line that is not a group is an error. */
function readRun(path: string, shown: string): ScoredGroupRecord[] {
  let text: string;
  try {
    if (statSync(path).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw fileError(path, 'read', error);
  }
  const groups: ScoredGroupRecord[] = [];
  const bad: string[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const parsed = safeParseJson(line, { source: `${shown}:${index + 1}` });
    if (!parsed.success) {
      bad.push(`line ${index + 1}: not valid JSON (cut off, or changed by hand?)`);
      return;
    }
    const group = scoredGroupRecordSchema.safeParse(parsed.value);
    if (group.success) groups.push(group.data as ScoredGroupRecord);
    else {
      const kind = (parsed.value as { kind?: unknown } | null)?.kind;
      const issue = group.error.issues[0];
      bad.push(
        kind !== 'shears.group'
          ? `line ${index + 1}: a record of kind ${JSON.stringify(kind ?? null)}, not a scored group`
          : `line ${index + 1}: not a scored group: ${issue?.path.join('.') || '(record)'}: ${issue?.message}`,
      );
    }
  });
  if (bad.length)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message: `${shown}: ${bad.length} line(s) are not scored groups, nothing exported:\n${bad
        .slice(0, 10)
        .map((line) => `  ${line}`)
        .join('\n')}${bad.length > 10 ? `\n  … and ${bad.length - 10} more` : ''}`,
    });
  return groups;
}

/** `--tools FILE`: a JSON array of OpenAI-style tool definitions (`{type: "function", function}`). */
function readTools(context: CommandContext, value: string | true | undefined): unknown[] | undefined {
  if (value === undefined) return undefined;
  const path = resolve(context.io.cwd, String(value));
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw fileError(path, 'read', error, context.io.cwd);
  }
  const parsed = safeParseJson(text, { source: String(value) });
  const tools = parsed.success ? parsed.value : undefined;
  const valid =
    Array.isArray(tools) &&
    tools.every(
      (tool) =>
        tool !== null &&
        typeof tool === 'object' &&
        (tool as { type?: unknown }).type === 'function' &&
        typeof (tool as { function?: { name?: unknown } }).function?.name === 'string',
    );
  if (!valid)
    throw new InvalidArgumentError({
      argument: '--tools',
      message: `--tools ${value}: expected a JSON array of tool definitions like [{"type": "function", "function": {"name": "…", "parameters": {…}}}]${parsed.success ? '' : ' (the file is not valid JSON)'}`,
    });
  return tools as unknown[];
}

const hasToolCalls = (messages: readonly Message[]) =>
  messages.some((message) => Array.isArray(message.tool_calls) && message.tool_calls.length > 0);

/** The conversation up to the first assistant turn. */
function promptOf(messages: readonly Message[]): Message[] {
  const first = messages.findIndex((message) => message.role === 'assistant');
  return first < 0 ? [...messages] : messages.slice(0, first);
}

function grpoRows(groups: readonly ScoredGroupRecord[]): Record<string, unknown>[] {
  const seen = new Set<string>();
  const rows: Record<string, unknown>[] = [];
  for (const group of groups) {
    if (seen.has(group.taskId)) continue;
    const rollout = group.rollouts[0];
    if (!rollout) continue;
    seen.add(group.taskId);
    rows.push({
      prompt: promptOf(rollout.messages as Message[]),
      task_id: group.taskId,
      // Text, so the dataset's columns have one type whatever fields the env's tasks carry.
      task: JSON.stringify(group.item),
    });
  }
  return rows;
}

export async function exportCommand(context: CommandContext): Promise<number> {
  const { io } = context;
  const file = context.positionals[0];
  if (!file)
    throw new InvalidArgumentError({
      argument: 'FILE',
      message: 'Usage: shears export RUN.jsonl --format sft|dpo|grpo [--out FILE] [--tools TOOLS.json]',
    });
  // Every flag this command reads, by name.
  const given: Given = {
    format: context.flags.format,
    out: context.flags.out,
    tools: context.flags.tools,
    'min-score': context.flags['min-score'],
    select: context.flags.select,
    'min-margin': context.flags['min-margin'],
    pairs: context.flags.pairs,
    force: context.flags.force,
  };
  const format = choiceFlag(given, 'format', FORMATS);
  if (!format)
    throw new InvalidArgumentError({
      argument: '--format',
      message: `--format is required: sft (TRL SFTTrainer), dpo (DPOTrainer) or grpo (GRPOTrainer)`,
    });
  for (const flag of ['min-score', 'select', 'min-margin', 'pairs', 'tools'])
    if (given[flag] !== undefined && !FORMAT_FLAGS[format].includes(flag))
      throw new InvalidArgumentError({
        argument: `--${flag}`,
        message: `--${flag} does nothing with --format ${format} (it is read by --format ${FORMATS.filter((other) => FORMAT_FLAGS[other].includes(flag)).join(', ')})`,
      });
  const input = resolve(io.cwd, file);
  const shown = (path: string) => relative(io.cwd, path) || path;
  const target =
    typeof given.out === 'string'
      ? resolve(io.cwd, given.out)
      : input.replace(/(\.jsonl)?$/, `.${format}.jsonl`);
  if (target === input)
    throw new InvalidArgumentError({
      argument: '--out',
      message: `--out is the run file itself (${shown(input)}); name another file`,
    });
  guardOutputs({
    paths: [target],
    cwd: io.cwd,
    force: given.force === true,
    elsewhere: '--out OTHER.jsonl',
  });
  const tools = readTools(context, given.tools);
  const groups = readRun(input, shown(input));

  let rows: Record<string, unknown>[];
  let toolCalls = false;
  if (format === 'sft') {
    const minScore = numberFlag(given, 'min-score');
    const select = choiceFlag(given, 'select', ['best', 'all'] as const);
    rows = toSftRecords(groups, {
      ...(minScore === undefined ? {} : { minScore }),
      ...(select ? { select } : {}),
    }).map((record) => {
      toolCalls ||= hasToolCalls(record.messages);
      return {
        messages: record.messages,
        ...(tools ? { tools } : {}),
        score: record.score,
        task_id: record.task_id,
      };
    });
  } else if (format === 'dpo') {
    const minMargin = numberFlag(given, 'min-margin');
    const pairs = choiceFlag(given, 'pairs', ['best-worst', 'all'] as const);
    rows = toDpoPairs(groups, {
      ...(minMargin === undefined ? {} : { minMargin }),
      ...(pairs ? { pairs } : {}),
    }).map((pair) => {
      toolCalls ||= hasToolCalls(pair.chosen) || hasToolCalls(pair.rejected);
      return { ...pair, ...(tools ? { tools } : {}) };
    });
  } else rows = grpoRows(groups);

  if (rows.length === 0) {
    const why =
      format === 'dpo'
        ? 'no group has two counted rollouts with different scores (above --min-margin)'
        : format === 'sft'
          ? 'no rollout has a counted score (above --min-score)'
          : 'the file has no groups';
    io.stderr(`nothing to export from ${shown(input)} (${groups.length} groups): ${why}; no file written\n`);
    return 1;
  }
  if (toolCalls && !tools)
    io.stderr(
      `note: the rollouts call tools, and a run file holds no tool definitions: the chat template will render them without the tools' descriptions; pass --tools TOOLS.json (the env's tool schemas) to include them\n`,
    );
  writeOutputFile(target, `${rows.map((row) => JSON.stringify(row)).join('\n')}\n`, {
    replace: given.force === true,
    cwd: io.cwd,
  });
  io.stdout(`${rows.length} ${format} rows from ${groups.length} groups → ${shown(target)}\n`);
  return 0;
}
