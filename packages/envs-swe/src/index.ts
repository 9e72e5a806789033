// @shears/envs-swe: the SWE environment — task schema and loaders, locally built images,
// test-based grading of the rollout's change in a fresh container, a bundled task pack with hidden
// tests, and a demo policy.

export type { ChangeKind, FileChange } from './agent-change.js';
export { diffTrees, renderChangeDiff } from './agent-change.js';
export type { ChangePolicy, DroppedChange } from './change-policy.js';
export { sortOutChange } from './change-policy.js';
export type {
  ArchiveSource,
  ReadTreeOptions,
  TreeEntry,
  TreeEntryType,
  TreeManifest,
} from './container-tree.js';
export { readContainerFile, readContainerTree, TreeTooLargeError } from './container-tree.js';
export type { SweDemoPlan, SweDemoPolicy } from './demo-policy.js';
export { createSweDemoPolicy, DEFAULT_DEMO_PLANS, taskMarker } from './demo-policy.js';
export type { ProgressCallback } from './images.js';
export {
  createDockerClient,
  ensureSweBaseImage,
  ensureTaskImage,
  SWE_BASE_RECIPE,
  SWE_WORKDIR,
  sweBaseImageTag,
  taskImageTag,
} from './images.js';
export { default, default as plugin, resolveSweTasks } from './plugin.js';
export type { PreparedRepository } from './repo.js';
export { filesAfterPatch, prepareRepository } from './repo.js';
export type { SweEnv, SweEnvSettings, SweItem } from './swe-env.js';
export { createSweEnv, SWE_SYSTEM_PROMPT } from './swe-env.js';
export type {
  GradeOptions,
  SweGrade,
  SweGradeReason,
  SweGrader,
  SweGraderSettings,
  SweGradingAudit,
  SweGradingTimings,
} from './swe-grading.js';
export { createSweGrader, gradeSweRollout } from './swe-grading.js';
export {
  bundledTaskPackDir,
  gradingTestPaths,
  loadSweBenchJsonl,
  loadTaskFolder,
  loadTaskPack,
  loadTaskPackPackage,
  patchedFiles,
} from './task-loaders.js';
export type { SweTask, SweTaskInput, SweTestRunner } from './task-schema.js';
export { defaultRunner, sweTaskSchema } from './task-schema.js';
export type {
  ExecutorRun,
  RunnerStream,
  RunTestsOptions,
  TestExecutor,
  TestRunResult,
  TestStatus,
} from './test-runs.js';
export {
  parsePytestReport,
  parseTapReport,
  readPytestStream,
  readRunnerStream,
  runTests,
  sandboxTestExecutor,
} from './test-runs.js';
