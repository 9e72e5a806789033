// @shears/tools-terminal: sandboxes (local, docker, ssh) over a persistent shell session, and the
// `terminal` and `process` tools. The default export is the plugin manifest.

// The action policy and its bash parser live in @shears/shell-policy; re-exported here for the
// imports that predate the split.
export type {
  ActionPolicy,
  ActionPolicySettings,
  ParsedCommand,
  PolicyDecision,
  PolicyToolCall,
  ShellWord,
} from '@shears/shell-policy';
export {
  actionPolicySettingsSchema,
  createActionPolicy,
  parseCommandLine,
  parseSimpleCommands,
  ShellParseError,
} from '@shears/shell-policy';
export type { BackgroundProcess, BackgroundSnapshot, BackgroundStatus } from './background-processes.js';
export { MAX_TRACKED_PROCESSES, processRegistry } from './background-processes.js';
export {
  IMAGE_HASH_LABEL,
  SANDBOX_BASE_IMAGE,
  SANDBOX_BASE_RECIPE,
  sandboxBaseHash,
} from './docker/base-image.js';
export type { DockerHostCheckOptions } from './docker/docker-check.js';
export { checkDockerHost } from './docker/docker-check.js';
export type {
  DockerConnectionOptions,
  DockerHost,
  DockerHostSettings,
  PlacementCandidate,
} from './docker/docker-hosts.js';
export { dockerHostSchema, pickHost, resolveDockerConnection } from './docker/docker-hosts.js';
export type { DockerSandbox } from './docker/docker-sandbox.js';
export type {
  DockerSandboxProvider,
  DockerSandboxSettings,
  StorageDriverInfo,
} from './docker/docker-sandbox-provider.js';
export {
  createDockerSandboxProvider,
  dockerSandboxSettingsSchema,
  LABELS as DOCKER_LABELS,
  supportsWritableLayerLimit,
  tmpfsTargets,
} from './docker/docker-sandbox-provider.js';
export type { LocalSandbox, LocalSandboxSettings } from './local/local-sandbox-provider.js';
export {
  createLocalSandboxProvider,
  LOCAL_INHERITED_ENV,
  localSandboxSettingsSchema,
} from './local/local-sandbox-provider.js';
export { default, default as plugin } from './plugin.js';
export type { ProcessInput, ProcessToolSettings } from './process-tool.js';
export { createProcessTool, PROCESS_ACTIONS, processInputSchema, processJsonSchema } from './process-tool.js';
export type { ShellSandbox, ShellSandboxOptions } from './shell-sandbox.js';
export { createShellSandbox } from './shell-sandbox.js';
export type {
  ShellExecOptions,
  ShellExecResult,
  ShellMode,
  ShellReadable,
  ShellSession,
  ShellSessionOptions,
  ShellTransport,
} from './shell-session.js';
export {
  CappedBytes,
  createShellSession,
  DEFAULT_MAX_OUTPUT_BYTES,
  formatTimeoutSeconds,
  SHELL_BOOTSTRAP,
  SHELL_BOOTSTRAP_COMMAND,
  SHELL_BOOTSTRAP_SCRIPT,
  ShellSessionClosedError,
  shellQuote,
} from './shell-session.js';
export type { SshSandboxProvider, SshSandboxSettings } from './ssh/ssh-sandbox-provider.js';
export {
  createSshSandboxProvider,
  sshFingerprint,
  sshSandboxSettingsSchema,
} from './ssh/ssh-sandbox-provider.js';
export type { TerminalInput, TerminalToolSettings } from './terminal-tool.js';
export {
  createTerminalTool,
  DEFAULT_TERMINAL_MAX_OUTPUT_CHARS,
  DEFAULT_TERMINAL_TIMEOUT_SECONDS,
  exitCodeMeaning,
  FOREGROUND_MAX_TIMEOUT_SECONDS,
  foregroundGuidance,
  stripAnsi,
  terminalInputSchema,
  terminalJsonSchema,
  terminalToolSettingsSchema,
  truncateOutput,
} from './terminal-tool.js';
