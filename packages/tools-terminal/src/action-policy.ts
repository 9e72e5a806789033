// The action policy ("sandbox isolation + action whitelisting"): per env, allow- and deny-lists
// of tools and of shell commands, checked before a tool call runs. Commands are matched on the
// parsed command line (every simple command in pipelines, lists, subshells, substitutions,
// `sh -c`, `eval`, `find -exec`, `xargs` and wrappers like `sudo`/`env`), never by substring.
// Refusals go back to the model as the tool's result and are counted in the trajectory
// (`policyRefusals`) by the agent loop.
import { InvalidArgumentError } from '@shears/core';
import { z } from 'zod';
import type { ParsedCommand } from './shell-parse.js';
import { parseCommandLine, ShellParseError } from './shell-parse.js';

const ruleList = z.array(z.string().min(1));

export const actionPolicySettingsSchema = z
  .object({
    commands: z
      .object({
        /**
         * When non-empty, every command a line runs must match one of these rules. A rule is a
         * command name with optional leading arguments: `ls`, `git status`, `python3 -m pytest`.
         */
        allow: ruleList.optional(),
        /**
         * Commands refused wherever they appear. `rm` refuses any rm; `git push` refuses git
         * whenever `push` appears among its arguments (deny rules err on the side of refusing).
         */
        deny: ruleList.optional(),
        /** Commands whose name is computed at run time (`$cmd`, `$(echo rm)`): refused by default. */
        allowDynamic: z.boolean().optional(),
      })
      .strict()
      .optional(),
    tools: z.object({ allow: ruleList.optional(), deny: ruleList.optional() }).strict().optional(),
    /** Which argument of which tool holds a shell command (default: `{ terminal: 'command' }`). */
    commandArguments: z.record(z.string(), z.string()).optional(),
  })
  .strict();
export type ActionPolicySettings = z.input<typeof actionPolicySettingsSchema>;

export type PolicyDecision = { allow: true } | { allow: false; message: string };

/** The shape of the core agent loop's `beforeToolCall` argument (only what the policy reads). */
export interface PolicyToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ActionPolicy {
  /** Checks one shell command line. */
  checkCommand(line: string): PolicyDecision;
  /** Checks one tool call: the tool name, then its command argument if it has one. */
  checkToolCall(call: PolicyToolCall): PolicyDecision;
  /** For `runAgent({ beforeToolCall })` / `runGroup({ beforeToolCall })`. */
  beforeToolCall: (call: PolicyToolCall) => PolicyDecision;
  /** Refusals so far (the agent loop also counts them per trajectory). */
  readonly refusals: number;
}

interface Rule {
  name: string;
  args: string[];
  text: string;
}

function parseRule(text: string, field: string): Rule {
  const words = text.trim().split(/\s+/);
  const first = words[0]!;
  if (!first || first.includes('*')) {
    throw new InvalidArgumentError({
      argument: field,
      value: text,
      message: `Invalid command rule ${JSON.stringify(text)} in ${field}: expected a command name with optional arguments (no wildcards)`,
    });
  }
  return { name: first.slice(first.lastIndexOf('/') + 1), args: words.slice(1), text };
}

function matchesAllow(rule: Rule, command: ParsedCommand): boolean {
  if (rule.name !== command.name) return false;
  return rule.args.every((arg, index) => command.args[index] === arg);
}

function matchesDeny(rule: Rule, command: ParsedCommand): boolean {
  if (rule.name !== command.name) return false;
  let from = 0;
  for (const arg of rule.args) {
    const found = command.args.indexOf(arg, from);
    if (found < 0) return false;
    from = found + 1;
  }
  return true;
}

const PREFIX = 'Refused by the action policy:';

function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

export function createActionPolicy(settings: ActionPolicySettings = {}): ActionPolicy {
  const parsed = actionPolicySettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new InvalidArgumentError({
      argument: 'actionPolicy',
      value: settings,
      message: `Invalid action policy: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')} (keys: commands.allow, commands.deny, commands.allowDynamic, tools.allow, tools.deny, commandArguments)`,
    });
  }
  const config = parsed.data;
  const allowCommands = (config.commands?.allow ?? []).map((rule) => parseRule(rule, 'commands.allow'));
  const denyCommands = (config.commands?.deny ?? []).map((rule) => parseRule(rule, 'commands.deny'));
  const allowDynamic = config.commands?.allowDynamic ?? false;
  const allowTools = new Set(config.tools?.allow ?? []);
  const denyTools = new Set(config.tools?.deny ?? []);
  const commandArguments = config.commandArguments ?? { terminal: 'command' };
  const hasCommandRules = allowCommands.length > 0 || denyCommands.length > 0;
  let refusals = 0;

  const refuse = (message: string): PolicyDecision => {
    refusals += 1;
    return { allow: false, message: `${PREFIX} ${message}` };
  };

  const checkCommandInner = (line: string): PolicyDecision => {
    if (!hasCommandRules) return { allow: true };
    let commands: ParsedCommand[];
    try {
      commands = parseCommandLine(line);
    } catch (error) {
      const reason = error instanceof ShellParseError ? error.message : String(error);
      return refuse(`the command could not be parsed (${reason}), so it cannot be checked. Nothing was run.`);
    }
    for (const command of commands) {
      if (command.dynamic) {
        if (allowDynamic) continue;
        return refuse(
          `the command name in "${clip(command.source)}" is computed at run time, so it cannot be checked. Write the command name literally. Nothing was run.`,
        );
      }
      const denied = denyCommands.find((rule) => matchesDeny(rule, command));
      if (denied) {
        return refuse(
          `"${denied.text}" is not allowed in this environment (found in: ${clip(command.source)}). Nothing was run.`,
        );
      }
      if (allowCommands.length > 0 && !allowCommands.some((rule) => matchesAllow(rule, command))) {
        return refuse(
          `"${command.name}" is not on this environment's list of allowed commands (${allowCommands.map((rule) => rule.text).join(', ')}). Nothing was run.`,
        );
      }
    }
    return { allow: true };
  };

  const checkToolCall = (call: PolicyToolCall): PolicyDecision => {
    if (denyTools.has(call.name))
      return refuse(`the tool "${call.name}" is not allowed in this environment.`);
    if (allowTools.size > 0 && !allowTools.has(call.name)) {
      return refuse(
        `the tool "${call.name}" is not allowed in this environment (allowed: ${[...allowTools].join(', ')}).`,
      );
    }
    const argument = commandArguments[call.name];
    if (argument !== undefined) {
      const value = call.arguments[argument];
      if (typeof value === 'string') return checkCommandInner(value);
    }
    return { allow: true };
  };

  return {
    checkCommand: checkCommandInner,
    checkToolCall,
    beforeToolCall: checkToolCall,
    get refusals() {
      return refusals;
    },
  };
}
