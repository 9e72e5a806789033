// The action policy: per env, allow- and deny-lists of tools and of shell commands, checked before
// a tool call runs. It guards a cooperative model against accidents; it is not a security
// boundary (the sandbox is). Commands are matched on the parsed command line (every simple command
// in pipelines, lists, subshells, substitutions, `sh -c`, `find -exec`, `xargs`, wrappers like
// `sudo`/`env` and the command-running options of common programs: shell-parse-programs.ts), never
// by substring; what the parser cannot see into (computed command names, `eval`, arithmetic on
// variables, assignments to PATH/HOME/LD_PRELOAD/GIT_*, a shell reading its script from a pipe, ...)
// is refused unless `allowDynamic`. A file tool's write is checked as a command writing that file:
// a file other programs run commands from or read as configuration (`.git/config`, `~/.bashrc`,
// `.npmrc`, a git hook, a program on PATH) is refused like `printf … > .git/config`. Refusals go
// back to the model as the tool's result and are counted in the trajectory (`policyRefusals`) by
// the agent loop.
import { InvalidArgumentError } from '@shears/core';
import { z } from 'zod';
import { parseCommandLine, ShellParseError } from './shell-parse.js';
import { configPathHazard, outputPathHazard } from './shell-parse-environment.js';
import type { ParsedCommand } from './types.js';

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
        /**
         * Allow what the parser cannot see into: command names computed at run time (`$cmd`),
         * `eval`/`source`/aliases/functions/traps, arithmetic on variables, assignments to variables
         * that change how programs behave (PATH, HOME, LD_PRELOAD, GIT_*, ...), shells and
         * interpreters reading their program from standard input, and options of known programs
         * that run commands (`sed e`, `rg --pre`, `git -c alias.x=!…`). Refused by default. The
         * commands the parser does see are still checked.
         */
        allowDynamic: z.boolean().optional(),
      })
      .strict()
      .optional(),
    tools: z.object({ allow: ruleList.optional(), deny: ruleList.optional() }).strict().optional(),
    /** Which argument of which tool holds a shell command (default: `{ terminal: 'command' }`). */
    commandArguments: z.record(z.string(), z.string()).optional(),
    /**
     * Which arguments of which tools name files the tool writes (default: @shears/tools-file's
     * `{ write_file: ['path'], patch: ['path', 'patch'] }`). Each file is checked as one a command
     * writes; an argument holding a patch (V4A `*** Update File:` headers or a unified diff's
     * `---`/`+++` lines) has every file it names checked. Checked when there are command rules.
     */
    fileWriteArguments: z.record(z.string(), z.array(z.string())).optional(),
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
  // An argument computed at run time (`git $x`, `git pu*`, `git {push,}`) may be the denied one.
  if (rule.args.length > 0 && command.argsDynamic) return true;
  let from = 0;
  for (const arg of rule.args) {
    const found = command.args.indexOf(arg, from);
    if (found < 0) return false;
    from = found + 1;
  }
  return true;
}

/**
 * Whether a path argument names a denied program (`/bin/rm`, `/usr/bin/r?`, `/bin/{rm,x}`): the
 * start of copying or linking it under another name.
 */
function namesDeniedProgram(arg: string, denied: ReadonlySet<string>): boolean {
  if (!arg.includes('/')) return false;
  const base = arg.slice(arg.lastIndexOf('/') + 1);
  if (denied.has(base)) return true;
  // A pattern (`/bin/r?`) counts only in a directory of programs, not `cp src/* dest/`.
  if (!/[*?[{]/.test(base) || !/(?:^|\/)s?bin\/$/.test(arg.slice(0, arg.length - base.length))) return false;
  let source = '';
  for (let index = 0; index < base.length; index += 1) {
    const char = base[index]!;
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else if (char === '[') {
      const close = base.indexOf(']', index + 2);
      if (close < 0) source += '\\[';
      else {
        source += `[${base
          .slice(index + 1, close)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        index = close;
      }
    } else if (char === '{') source += '(?:';
    else if (char === '}') source += ')';
    else if (char === ',') source += '|';
    else source += char.replace(/[.+^$()|\\]/g, '\\$&');
  }
  try {
    const pattern = new RegExp(`^${source}$`);
    return [...denied].some((name) => pattern.test(name));
  } catch {
    return true;
  }
}

const PREFIX = 'Refused by the action policy:';

/** The file tools' defaults: @shears/tools-file's write_file and patch. */
const DEFAULT_FILE_WRITES: Record<string, string[]> = { write_file: ['path'], patch: ['path', 'patch'] };

const PATCH_HEADERS = [
  /^\s*\*\*\*\s*(?:Update|Add|Delete)\s+File:\s*(.+?)\s*$/,
  /^\s*\*\*\*\s*Move\s+to:\s*(.+?)\s*$/,
  /^\s*\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+?)\s*$/,
  /^(?:---|\+\+\+)\s+(.+?)(?:\t.*)?$/,
  /^diff --git\s+(\S+)\s+(\S+)/,
  /^(?:rename|copy) (?:from|to) (.+)$/,
];

/**
 * The files a file-tool argument names: the value itself, or for a patch every file its headers
 * name (read more loosely than the file tools read them, so that no header they accept is missed).
 */
function filesNamedBy(value: string): string[] {
  if (!value.includes('\n')) return [value];
  const files: string[] = [];
  for (const line of value.split(/\r?\n/)) {
    for (const pattern of PATCH_HEADERS) {
      const match = pattern.exec(line);
      if (!match) continue;
      for (const path of match.slice(1)) {
        if (path && path !== '/dev/null') files.push(path.replace(/^[ab]\//, ''), path);
      }
    }
  }
  return files;
}

function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

export function createActionPolicy(settings: ActionPolicySettings = {}): ActionPolicy {
  const parsed = actionPolicySettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new InvalidArgumentError({
      argument: 'actionPolicy',
      value: settings,
      message: `Invalid action policy: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')} (keys: commands.allow, commands.deny, commands.allowDynamic, tools.allow, tools.deny, commandArguments, fileWriteArguments)`,
    });
  }
  const config = parsed.data;
  const allowCommands = (config.commands?.allow ?? []).map((rule) => parseRule(rule, 'commands.allow'));
  const denyCommands = (config.commands?.deny ?? []).map((rule) => parseRule(rule, 'commands.deny'));
  const allowDynamic = config.commands?.allowDynamic ?? false;
  const allowTools = new Set(config.tools?.allow ?? []);
  const denyTools = new Set(config.tools?.deny ?? []);
  const commandArguments = config.commandArguments ?? { terminal: 'command' };
  const fileWriteArguments = config.fileWriteArguments ?? DEFAULT_FILE_WRITES;
  const hasCommandRules = allowCommands.length > 0 || denyCommands.length > 0;
  let refusals = 0;

  const refuse = (message: string): PolicyDecision => {
    refusals += 1;
    return { allow: false, message: `${PREFIX} ${message}` };
  };

  // Deny rules without arguments name programs; a path to one (`cp /bin/rm x`) is refused too.
  const deniedPrograms = new Set(
    denyCommands.filter((rule) => rule.args.length === 0).map((rule) => rule.name),
  );

  const checkCommandInner = (line: string): PolicyDecision => {
    if (!hasCommandRules) return { allow: true };
    let commands: ParsedCommand[];
    try {
      commands = parseCommandLine(line);
    } catch (error) {
      const reason = ShellParseError.isInstance(error) ? error.message : String(error);
      return refuse(`the command could not be parsed (${reason}), so it cannot be checked. Nothing was run.`);
    }
    for (const command of commands) {
      if (command.dynamic) {
        if (allowDynamic) continue;
        if (command.reason && command.reason !== 'the command name is computed at run time') {
          return refuse(
            `${command.reason} in "${clip(command.source)}" cannot be checked by this environment's command policy. Nothing was run.`,
          );
        }
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
      if (deniedPrograms.size > 0) {
        const path = [...command.args, ...(command.paths ?? [])].find((arg) =>
          namesDeniedProgram(arg, deniedPrograms),
        );
        if (path) {
          return refuse(
            `"${path}" names a program that is not allowed in this environment (found in: ${clip(command.source)}). Nothing was run.`,
          );
        }
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
    const writes = hasCommandRules && !allowDynamic ? fileWriteArguments[call.name] : undefined;
    for (const name of writes ?? []) {
      const value = call.arguments[name];
      if (typeof value !== 'string') continue;
      for (const file of filesNamedBy(value)) {
        const reason = configPathHazard(file) ?? outputPathHazard({ text: file, dynamic: false });
        if (reason) {
          return refuse(
            `${call.name} would write "${clip(file)}", ${reason}; this environment's command policy counts that as running the program that reads it, which it cannot check. Nothing was written.`,
          );
        }
      }
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
