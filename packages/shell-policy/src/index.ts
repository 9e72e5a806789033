// @shears/shell-policy: the action policy (allow and deny lists of tools and of the commands a
// bash line would run) and the conservative bash parser behind it. It guards a cooperative model
// against accidents; it is not a security boundary (the sandbox is).

export type { ActionPolicy, ActionPolicySettings, PolicyDecision, PolicyToolCall } from './action-policy.js';
export { actionPolicySettingsSchema, createActionPolicy } from './action-policy.js';
export { parseCommandLine, parseSimpleCommands, ShellParseError } from './shell-parse.js';
export type { ParsedCommand, ShellWord } from './types.js';
