// The SWE task schema: a repository at a commit, a problem statement, set-up commands, the test
// runner, FAIL_TO_PASS and PASS_TO_PASS test ids, the test files that are restored before
// grading, difficulty, and optional hints, gold patch and test patch (SWE-bench semantics).
import { z } from 'zod';

const sweRepositorySchema = z
  .object({
    /** A local directory holding the repository at the state to fix. */
    path: z.string().min(1).optional(),
    /** A git URL (https, ssh or file) cloned at `commit`. */
    url: z.string().min(1).optional(),
    commit: z.string().min(1).optional(),
  })
  .refine((repo) => Boolean(repo.path) !== Boolean(repo.url), {
    message: 'give exactly one of "path" or "url"',
  })
  .refine((repo) => !repo.url || Boolean(repo.commit), { message: '"commit" is required with "url"' });

export const sweTestRunnerSchema = z.discriminatedUnion('runner', [
  /** pytest with `-rA` (see `assets/pytest-launcher.py`); ids are pytest node ids (`tests/test_x.py::test_y`). */
  z.object({ runner: z.literal('pytest'), args: z.array(z.string()).default([]) }),
  /** node's test runner (`node --test`) per file, see `runTests`; ids are `FILE::test name` (top-level tests). */
  z.object({ runner: z.literal('node-test') }),
]);
export type SweTestRunner = z.output<typeof sweTestRunnerSchema>;

/** A path inside the repository: relative, `/`-separated, no `.` or `..` parts and no `.git`. */
function isRepositoryPath(path: string): boolean {
  return (
    path.length > 0 &&
    !path.startsWith('/') &&
    !path.includes('\\') &&
    path.split('/').every((part) => part !== '' && part !== '.' && part !== '..' && part !== '.git')
  );
}

/** Files by repository path; every path must stay inside the repository. */
const repositoryFilesSchema = z.record(z.string(), z.string()).superRefine((files, context) => {
  for (const path of Object.keys(files))
    if (!isRepositoryPath(path))
      context.addIssue({
        code: 'custom',
        path: [path],
        message: `"${path}" must be a relative path inside the repository (no leading /, no . or .. parts, no .git)`,
      });
});

export const sweTaskSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'task ids use letters, digits, ".", "_" and "-"'),
  language: z.string().default('python'),
  repo: sweRepositorySchema,
  problemStatement: z.string().min(1),
  /** Commands run once when the task image is built (dependencies), in the repository. */
  setup: z.array(z.string()).default([]),
  test: sweTestRunnerSchema,
  failToPass: z.array(z.string().min(1)).min(1, 'a task needs at least one FAIL_TO_PASS test'),
  passToPass: z.array(z.string().min(1)).default([]),
  /** The visible test files: the agent's changes to them are dropped before grading. */
  testFiles: z.array(z.string().min(1)).default([]),
  difficulty: z.enum(['easy', 'medium', 'hard']).default('medium'),
  hints: z.string().optional(),
  /** The reference fix as a unified diff. Never enters the sandbox. */
  goldPatch: z.string().optional(),
  /** Test changes applied at grading time (SWE-bench `test_patch`); never in the agent's sandbox. */
  testPatch: z.string().optional(),
  /**
   * Test files the agent never sees (path → content): put in place only in the grading container,
   * after the agent's change. Their tests can be named in FAIL_TO_PASS / PASS_TO_PASS.
   */
  hiddenTests: repositoryFilesSchema.default({}),
  /** Globs of paths the agent may not change (dropped from its change before grading), beyond the defaults. */
  protectedPaths: z.array(z.string().min(1)).default([]),
  /** Globs exempt from the test-configuration rule (a fix that must change setup.cfg, package.json, …). */
  allowedPaths: z.array(z.string().min(1)).default([]),
  /** Grading timeout. */
  timeoutMs: z.number().int().positive().default(120_000),
});
export type SweTask = z.output<typeof sweTaskSchema>;
export type SweTaskInput = z.input<typeof sweTaskSchema>;

/** Default test runner for a language. */
export function defaultRunner(language: string): SweTestRunner {
  return language === 'javascript' || language === 'typescript'
    ? { runner: 'node-test' }
    : { runner: 'pytest', args: [] };
}
