// @shears/envs-swe: the SWE environment — task schema and loaders, locally built images,
// test-based grading with anti-hacking hardening, a bundled task pack and a demo policy.
import plugin from './plugin.js';

export default plugin;
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
export { resolveSweTasks } from './plugin.js';
export type { PreparedRepository, ProtectedFile } from './repo.js';
export { filesAfterPatch, prepareRepository } from './repo.js';
export type { SweEnv, SweEnvSettings, SweItem } from './swe-env.js';
export { createSweEnv, SWE_SYSTEM_PROMPT } from './swe-env.js';
export type { GradeOptions, SweGrade } from './swe-grading.js';
export { gradeSweRollout } from './swe-grading.js';
export {
  bundledTaskPackDir,
  loadSweBenchJsonl,
  loadTaskFolder,
  loadTaskPack,
  loadTaskPackPackage,
  patchedFiles,
} from './task-loaders.js';
export type { SweTask, SweTaskInput, SweTestRunner } from './task-schema.js';
export { defaultRunner, sweTaskSchema } from './task-schema.js';
export type { TestRunResult, TestStatus } from './test-runs.js';
export { parsePytestReport, parseTapReport, readPytestResultFile, runTests } from './test-runs.js';
export { plugin };
