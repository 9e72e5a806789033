// @shears/cli: the `shears` command as a library — run it in-process, load and validate
// configs, build the trajectory viewer, and the bundled demo environment and policy.

export type {
  CommandName,
  CommandSpec,
  FlagSpec,
  OverrideValue,
  ParsedArgs,
  ParseOutcome,
} from './args.js';
export { COMMAND_SPECS, parseArgs, renderCliReference } from './args.js';
export { runCli } from './cli.js';
export { configJsonSchema } from './config/config-json-schema.js';
export type { ShearsConfig, ShearsConfigInput } from './config/config-schema.js';
export {
  apiConfigSchema,
  envConfigSchema,
  evaluateConfigSchema,
  runConfigSchema,
  sandboxConfigSchema,
  serverConfigSchema,
  shearsConfigSchema,
  trainConfigSchema,
} from './config/config-schema.js';
export type { LoadConfigOptions, LoadedConfig } from './config/load-config.js';
export { configErrorFromZod, loadConfig } from './config/load-config.js';
export type { DemoEnvSettings, DemoItem } from './demo/demo-env.js';
export { createDemoEnv, DEMO_SYSTEM_PROMPT } from './demo/demo-env.js';
export type { DemoPlan, DemoPolicyOptions } from './demo/demo-policy.js';
export { createDemoPolicy, pickPlan } from './demo/demo-policy.js';
export { startDemoServer } from './demo/demo-server.js';
export type { DemoTask } from './demo/demo-tasks.js';
export { DEMO_TASKS } from './demo/demo-tasks.js';
export type { CliIo } from './io.js';
export { processIo } from './io.js';
export { default, default as plugin } from './plugin.js';
export type { Redactor, SecretField } from './redact.js';
export { collectSecrets, createRedactor } from './redact.js';
export { EXIT_CODES } from './runtime/run-control.js';
export type { ConfidenceInterval, SuccessRule } from './stats.js';
export { bootstrapMean, passAtK, successRule } from './stats.js';
export type { BuildViewerOptions, ReadGroupsResult, ViewerMeta } from './viewer/build-viewer.js';
export { buildViewerHtml, readGroupsForViewer } from './viewer/build-viewer.js';
export { createSyntheticGroups } from './viewer/synthetic-groups.js';
