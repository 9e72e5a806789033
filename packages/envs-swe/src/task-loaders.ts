// Loaders for SWE tasks: task-pack folders (one folder per task with task.json, repo/, and optional
// gold.patch, test.patch and hidden/ tests), task packs published as npm packages, and JSONL in
// the SWE-bench field layout. Every validation error names the file, the task and the field.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, safeParseJson } from '@shears/core';
import { z } from 'zod';
import { defaultRunner, type SweTask, sweTaskSchema } from './task-schema.js';

function formatIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.join('.') || '(root)', message: issue.message }));
}

function validateTask(raw: unknown, where: string): SweTask {
  const parsed = sweTaskSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = formatIssues(parsed.error);
  throw new ConfigError({
    message: `Invalid SWE task in ${where}: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`,
    issues,
  });
}

/** task.json of a task-pack folder (snake_case keys as in SWE-bench, camelCase accepted too). */
const taskFileSchema = z.looseObject({
  id: z.string().optional(),
  language: z.string().optional(),
  problem_statement: z.string().optional(),
  problemStatement: z.string().optional(),
  setup: z.array(z.string()).optional(),
  test: z.unknown().optional(),
  FAIL_TO_PASS: z.array(z.string()).optional(),
  PASS_TO_PASS: z.array(z.string()).optional(),
  test_files: z.array(z.string()).optional(),
  difficulty: z.string().optional(),
  hints: z.string().optional(),
  repo: z.unknown().optional(),
  timeout_ms: z.number().optional(),
  protected_paths: z.array(z.string()).optional(),
  protectedPaths: z.array(z.string()).optional(),
  allowed_paths: z.array(z.string()).optional(),
  allowedPaths: z.array(z.string()).optional(),
});

/** Every file under `directory` (relative path → UTF-8 content), for a task's hidden tests. */
function readFolderFiles(directory: string, base = directory): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(directory).sort()) {
    const path = join(directory, name);
    const stats = statSync(path);
    if (stats.isDirectory()) Object.assign(files, readFolderFiles(path, base));
    else files[relative(base, path).split(sep).join('/')] = readFileSync(path, 'utf8');
  }
  return files;
}

/**
 * Loads one task folder: task.json, repo/ (unless task.json names a repo), gold.patch, test.patch,
 * and hidden/ (test files the agent never sees, put in place at grading time).
 */
export function loadTaskFolder(folder: string): SweTask {
  const file = join(folder, 'task.json');
  if (!existsSync(file)) throw new ConfigError({ message: `Task folder ${folder} has no task.json` });
  const parsed = safeParseJson(readFileSync(file, 'utf8'), { source: file, schema: taskFileSchema });
  if (!parsed.success) throw new ConfigError({ message: parsed.error.message, cause: parsed.error });
  const raw = parsed.value;
  const id = raw.id ?? folder.split(/[\\/]/).pop()!;
  const language = raw.language ?? 'python';
  const repoDir = join(folder, 'repo');
  const goldFile = join(folder, 'gold.patch');
  const testPatchFile = join(folder, 'test.patch');
  const hiddenDir = join(folder, 'hidden');
  return validateTask(
    {
      id,
      language,
      repo: raw.repo ?? { path: repoDir },
      problemStatement: raw.problemStatement ?? raw.problem_statement,
      setup: raw.setup ?? [],
      test: raw.test ?? defaultRunner(language),
      failToPass: raw.FAIL_TO_PASS ?? raw.failToPass,
      passToPass: raw.PASS_TO_PASS ?? raw.passToPass ?? [],
      testFiles: raw.test_files ?? raw.testFiles ?? [],
      difficulty: raw.difficulty,
      hints: raw.hints,
      goldPatch: existsSync(goldFile) ? readFileSync(goldFile, 'utf8') : undefined,
      testPatch: existsSync(testPatchFile) ? readFileSync(testPatchFile, 'utf8') : undefined,
      hiddenTests: existsSync(hiddenDir) ? readFolderFiles(hiddenDir) : {},
      protectedPaths: raw.protected_paths ?? raw.protectedPaths ?? [],
      allowedPaths: raw.allowed_paths ?? raw.allowedPaths ?? [],
      timeoutMs: raw.timeout_ms,
    },
    file,
  );
}

/**
 * Loads a task pack: a folder whose sub-folders are tasks, or whose `pack.json` lists them
 * (`{ "name": "...", "tasks": ["a", "b"] }`). Tasks are sorted by id.
 */
export function loadTaskPack(directory: string): SweTask[] {
  const root = resolve(directory);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new ConfigError({ message: `Task pack folder not found: ${root}` });
  let folders: string[];
  const manifest = join(root, 'pack.json');
  if (existsSync(manifest)) {
    const parsed = safeParseJson(readFileSync(manifest, 'utf8'), {
      source: manifest,
      schema: z.object({ name: z.string().optional(), tasks: z.array(z.string()) }),
    });
    if (!parsed.success) throw new ConfigError({ message: parsed.error.message, cause: parsed.error });
    folders = parsed.value.tasks.map((name) => join(root, name));
  } else {
    folders = readdirSync(root)
      .map((name) => join(root, name))
      .filter((path) => statSync(path).isDirectory() && existsSync(join(path, 'task.json')));
  }
  if (folders.length === 0)
    throw new ConfigError({
      message: `Task pack ${root} contains no tasks (no sub-folder with a task.json)`,
    });
  const tasks = folders.map((folder) => loadTaskFolder(folder));
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id))
      throw new ConfigError({ message: `Task pack ${root} has the task id "${task.id}" twice` });
    seen.add(task.id);
  }
  return tasks.sort((a, b) => a.id.localeCompare(b.id));
}

/** The folder of the task pack bundled with @shears/envs-swe. */
export function bundledTaskPackDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', 'tasks');
}

/**
 * Loads a task pack published as an npm package: its package.json names the folder in
 * `"shears": { "taskPack": "tasks" }`. The package is looked up in node_modules from `from` upwards.
 */
export function loadTaskPackPackage(name: string, options: { from?: string } = {}): SweTask[] {
  let directory = resolve(options.from ?? process.cwd());
  for (;;) {
    const candidate = join(directory, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) {
      const parsed = safeParseJson(readFileSync(candidate, 'utf8'), {
        source: candidate,
        schema: z.looseObject({ shears: z.looseObject({ taskPack: z.string() }).optional() }),
      });
      if (!parsed.success) throw new ConfigError({ message: parsed.error.message, cause: parsed.error });
      const folder = parsed.value.shears?.taskPack;
      if (!folder)
        throw new ConfigError({
          message: `Package "${name}" is not a shears task pack: its package.json has no "shears": { "taskPack": "<folder>" }`,
        });
      return loadTaskPack(join(dirname(candidate), folder));
    }
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  throw new ConfigError({
    message: `Task pack package "${name}" is not installed (searched node_modules upwards from ${options.from ?? process.cwd()})`,
  });
}

const sweBenchLineSchema = z.looseObject({
  instance_id: z.string(),
  repo: z.string(),
  base_commit: z.string(),
  problem_statement: z.string(),
  hints_text: z.string().nullish(),
  patch: z.string().nullish(),
  test_patch: z.string().nullish(),
  FAIL_TO_PASS: z.union([z.string(), z.array(z.string())]),
  PASS_TO_PASS: z.union([z.string(), z.array(z.string())]).nullish(),
  difficulty: z.string().nullish(),
  language: z.string().nullish(),
});

function testIds(value: string | string[] | null | undefined, where: string): string[] {
  if (value == null) return [];
  if (Array.isArray(value)) return value;
  const parsed = safeParseJson(value, { source: where, schema: z.array(z.string()) });
  if (!parsed.success) throw new ConfigError({ message: parsed.error.message, cause: parsed.error });
  return parsed.value;
}

/** Files a unified diff touches: both sides of each `--- a/…` / `+++ b/…` header pair (deleted and added files too). */
export function patchedFiles(patch: string): string[] {
  const files = new Set<string>();
  for (const match of patch.matchAll(/^--- (?:a\/)?(.+)\r?\n\+\+\+ (?:b\/)?(.+)$/gm)) {
    for (const side of [match[1]!, match[2]!]) {
      const path = side.replace(/\t.*$/, '').trim();
      if (path !== '/dev/null') files.add(path);
    }
  }
  return [...files];
}

/**
 * Paths of the task's tests: the visible test files, the files its test patch touches and its
 * hidden tests. The agent's changes to them are dropped before grading.
 */
export function gradingTestPaths(task: SweTask): string[] {
  return [
    ...new Set([
      ...task.testFiles,
      ...(task.testPatch ? patchedFiles(task.testPatch) : []),
      ...Object.keys(task.hiddenTests),
    ]),
  ].sort();
}

const SWE_BENCH_DIFFICULTY: Record<string, 'easy' | 'medium' | 'hard'> = {
  '<15 min fix': 'easy',
  '15 min - 1 hour': 'medium',
  '1-4 hours': 'hard',
  '>4 hours': 'hard',
};

/**
 * Loads JSONL in the SWE-bench field layout (instance_id, repo, base_commit, problem_statement,
 * hints_text, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS). `repos` maps "owner/name" to a
 * local clone; otherwise the repository is `https://github.com/<repo>.git` at base_commit.
 */
export function loadSweBenchJsonl(path: string, options: { repos?: Record<string, string> } = {}): SweTask[] {
  const tasks: SweTask[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    const where = `${path} line ${index + 1}`;
    const parsed = safeParseJson(line, { source: where, schema: sweBenchLineSchema });
    if (!parsed.success) throw new ConfigError({ message: parsed.error.message, cause: parsed.error });
    const row = parsed.value;
    const local = options.repos?.[row.repo];
    const language = row.language ?? 'python';
    tasks.push(
      validateTask(
        {
          id: row.instance_id,
          language,
          repo: local
            ? { path: local }
            : { url: `https://github.com/${row.repo}.git`, commit: row.base_commit },
          problemStatement: row.problem_statement,
          test: defaultRunner(language),
          failToPass: testIds(row.FAIL_TO_PASS, `${where} FAIL_TO_PASS`),
          passToPass: testIds(row.PASS_TO_PASS, `${where} PASS_TO_PASS`),
          testFiles: row.test_patch ? patchedFiles(row.test_patch) : [],
          difficulty: row.difficulty ? (SWE_BENCH_DIFFICULTY[row.difficulty] ?? 'medium') : undefined,
          hints: row.hints_text || undefined,
          goldPatch: row.patch ?? undefined,
          testPatch: row.test_patch ?? undefined,
        },
        where,
      ),
    );
  });
  return tasks;
}
