// Tasks from a file, for the generic `tasks` env: a JSON array of task objects, or JSONL (one
// object per line). Every problem is reported at once, each naming the line (JSONL) or the
// array index (JSON) and the field, so a user fixes a file in one pass.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { InvalidArgumentError, safeParseJson } from '@shears/core';
import { z } from 'zod';

export const taskVerifierSchema = z.strictObject({
  /** Shell command run in the rollout's sandbox after the agent stops. */
  command: z.string().min(1),
  /**
   * How the reward is read: `exit_code` (0 → 1, anything else → 0) or `output` (the last
   * non-empty line of the output is the reward, a number in [0, 1]; a verifier that prints none is an error).
   */
  reward: z.enum(['exit_code', 'output']).default('exit_code'),
  timeout_ms: z.int().min(1).max(3_600_000).default(60_000),
});

export const fileTaskSchema = z
  .strictObject({
    id: z.string().min(1).optional(),
    prompt: z.string().min(1),
    /** A system message before the prompt (default: the env's `system` setting). */
    system: z.string().min(1).optional(),
    /** Shell commands run in the fresh sandbox before the agent starts. */
    setup: z.array(z.string().min(1)).default([]),
    /** A verifier command (string: reward from its exit code) or a verifier object. */
    verify: z.union([z.string().min(1), taskVerifierSchema]),
    /**
     * What the configured judge (`judge` in the config, required then) scores the rollout
     * against, given to it as the reference; its verdict is blended in by `judge.weight`.
     */
    rubric: z.string().min(1).optional(),
    difficulty: z.union([z.number(), z.string().min(1)]).optional(),
    /** Tools the task needs (registry tool names); default: the env's `tools` setting. */
    tools: z.array(z.string().min(1)).min(1).optional(),
  });

export interface FileTask {
  id: string;
  prompt: string;
  system?: string;
  setup: string[];
  verify: z.output<typeof taskVerifierSchema>;
  rubric?: string;
  difficulty?: number | string;
  tools?: string[];
  /** Where the task is in its file, for messages: "tasks.jsonl line 3". */
  where: string;
}

/** A task file that cannot be used: every problem, each naming line (or index) and field. */
export function taskFileError(file: string, problems: readonly string[]): InvalidArgumentError {
  const shown = problems.slice(0, 20);
  return new InvalidArgumentError({
    argument: 'file',
    value: file,
    message: `task file ${file}: ${problems.length} problem${problems.length > 1 ? 's' : ''}:\n  ${shown.join('\n  ')}${problems.length > shown.length ? `\n  … and ${problems.length - shown.length} more` : ''}`,
  });
}

function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const field = issue.path.length ? issue.path.join('.') : '';
    if (issue.code === 'unrecognized_keys')
      return `field ${issue.keys.map((key) => `"${key}"`).join(', ')}: not a task field (fields: ${Object.keys(fileTaskSchema.shape).join(', ')})`;
    // zod says "expected string, received undefined" for a field that is not there.
    const message = / received undefined$/.test(issue.message) ? 'missing (required)' : issue.message;
    return field ? `field "${field}": ${message}` : message;
  });
}

/** Parses a task file's text; `name` is how the file is named in messages. */
export function parseTaskFile(text: string, name: string): FileTask[] {
  const problems: string[] = [];
  const entries: Array<{ value: unknown; where: string }> = [];
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    const parsed = safeParseJson(text, { source: name });
    if (!parsed.success) throw taskFileError(name, [parsed.error.message]);
    (parsed.value as unknown[]).forEach((value, index) => {
      entries.push({ value, where: `${name} [${index}]` });
    });
  } else {
    text.split('\n').forEach((line, index) => {
      if (line.trim() === '') return;
      const where = `${name} line ${index + 1}`;
      const parsed = safeParseJson(line, { source: where });
      if (!parsed.success) problems.push(parsed.error.message.replace(/ at line 1, column/, ', column'));
      else entries.push({ value: parsed.value, where });
    });
  }
  const tasks: FileTask[] = [];
  const seen = new Map<string, string>();
  for (const { value, where } of entries) {
    const parsed = fileTaskSchema.safeParse(value);
    if (!parsed.success) {
      for (const issue of describeIssues(parsed.error)) problems.push(`${where}: ${issue}`);
      continue;
    }
    const task = parsed.data;
    const id = task.id ?? where.replace(/^.* /, 'task-').replace(/[[\]]/g, '');
    const earlier = seen.get(id);
    if (earlier) {
      problems.push(`${where}: field "id": "${id}" is already the id of the task at ${earlier}`);
      continue;
    }
    seen.set(id, where);
    tasks.push({
      id,
      prompt: task.prompt,
      setup: task.setup,
      where,
      ...(task.system ? { system: task.system } : {}),
      verify:
        typeof task.verify === 'string'
          ? { command: task.verify, reward: 'exit_code' as const, timeout_ms: 60_000 }
          : task.verify,
      ...(task.rubric ? { rubric: task.rubric } : {}),
      ...(task.difficulty !== undefined ? { difficulty: task.difficulty } : {}),
      ...(task.tools ? { tools: task.tools } : {}),
    });
  }
  if (problems.length) throw taskFileError(name, problems);
  if (tasks.length === 0) throw taskFileError(name, ['no tasks (the file is empty)']);
  return tasks;
}

/** Reads and parses a task file; a file that cannot be read is named with the reason. */
export function readTaskFile(path: string, cwd: string): FileTask[] {
  const name = relative(cwd, path) || path;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new InvalidArgumentError({
      argument: 'file',
      value: path,
      message: `cannot read task file ${name}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message}`,
    });
  }
  return parseTaskFile(text, name);
}
