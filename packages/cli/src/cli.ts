// The `shears` command: parses arguments, loads the config, and dispatches to a subcommand.
// `runCli` is what the bin calls and what end-to-end tests call in-process.

import { setMaxListeners } from 'node:events';
import { dirname, resolve } from 'node:path';
import { ConfigError, describeError, InvalidArgumentError, ShearsError } from '@shears/core';
import { type CommandName, parseArgs } from './args.js';
import {
  checkInputPaths,
  resolveCommandLinePaths,
  resolveConfigPluginPackages,
} from './config/config-paths.js';
import { loadConfig } from './config/load-config.js';
import { type CliIo, createCliLogger, processIo } from './io.js';
import { explainMissingPackage } from './plugin-packages.js';
import { collectSecrets, createRedactor, type Redactor, weakSecretsWarning } from './redact.js';
import type { CommandContext } from './session.js';

type Command = (context: CommandContext) => Promise<number>;

const COMMANDS: Record<CommandName, () => Promise<Command>> = {
  process: async () => (await import('./commands/process.js')).processCommand,
  serve: async () => (await import('./commands/serve.js')).serveCommand,
  evaluate: async () => (await import('./commands/evaluate.js')).evaluateCommand,
  api: async () => (await import('./commands/api.js')).apiCommand,
  train: async () => (await import('./commands/train.js')).trainCommand,
  view: async () => (await import('./commands/view.js')).viewCommand,
  export: async () => (await import('./commands/export.js')).exportCommand,
  prepare: async () => (await import('./commands/prepare.js')).prepareCommand,
  doctor: async () => (await import('./commands/doctor.js')).doctorCommand,
  schema: async () => (await import('./commands/schema.js')).schemaCommand,
};

export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let redact: Redactor = createRedactor([]);
  try {
    const outcome = parseArgs(argv, io);
    if (outcome.kind === 'exit') return outcome.code;
    const { args } = outcome;
    const configPath = typeof args.flags.config === 'string' ? args.flags.config : undefined;
    const loaded = loadConfig({
      path: configPath === undefined ? undefined : resolve(io.cwd, configPath),
      overrides: args.overrides,
      environment: io.env,
    });
    if (loaded.atropos)
      io.stderr(
        `${configPath} uses the Atropos chapter's layout; read as shears settings:\n${loaded.atropos.lines.join('\n')}\n`,
      );
    checkInputPaths(loaded.config, {
      command: args.command,
      cwd: io.cwd,
      origins: loaded.pathOrigins,
      aliases: loaded.atropos?.aliases,
    });
    resolveCommandLinePaths(loaded.config, io.cwd);
    // Packages a config file names resolve from its folder (a --plugins list: the working directory's).
    if (loaded.path !== undefined && args.overrides.plugins === undefined)
      resolveConfigPluginPackages(loaded.config, {
        command: args.command,
        configDir: dirname(resolve(loaded.path)),
        cwd: io.cwd,
        note: (line) => io.stderr(`${line}\n`),
      });
    redact = createRedactor(collectSecrets(loaded.config, { apiKey: loaded.apiKey, environment: io.env }));
    const logger = createCliLogger(io, redact, { debug: io.env.SHEARS_DEBUG === '1' });
    const weak = weakSecretsWarning(redact);
    if (weak) logger.warn(weak);
    const controller = new AbortController();
    // Every rollout listens on the run's signal; hundreds of listeners are expected here.
    setMaxListeners(0, controller.signal);
    if (io.signal) {
      if (io.signal.aborted) controller.abort(io.signal.reason);
      else io.signal.addEventListener('abort', () => controller.abort(io.signal!.reason), { once: true });
    }
    // Only the running commands drain on the first Ctrl-C; every other one stops on it.
    if (io.drain && !['process', 'evaluate', 'serve', 'train'].includes(args.command))
      io.drain.addEventListener('abort', () => controller.abort(io.drain!.reason), { once: true });
    const run = await COMMANDS[args.command]().catch((error: unknown) => {
      throw explainMissingPackage(error, args.command);
    });
    return await run({
      config: loaded.config,
      apiKey: loaded.apiKey,
      io,
      logger,
      redact,
      signal: controller.signal,
      // The first Ctrl-C: finish what is finished, start nothing new (a second one aborts `signal`).
      drain: io.drain ?? controller.signal,
      positionals: args.positionals,
      flags: args.flags,
    });
  } catch (error) {
    if (ConfigError.isInstance(error) || InvalidArgumentError.isInstance(error)) {
      io.stderr(`${redact(error.message)}\n`);
      return 2;
    }
    if (ShearsError.isInstance(error)) {
      io.stderr(`error: ${redact(error.message)}\n`);
      return 1;
    }
    // A system error (a file, a port, a connection) is the user's to fix: its message is enough.
    const systemError =
      typeof (error as { code?: unknown })?.code === 'string' &&
      /^E[A-Z]+$/.test((error as { code: string }).code);
    const stack =
      systemError && io.env.SHEARS_DEBUG !== '1' ? '' : `${redact((error as Error)?.stack ?? '')}\n`;
    io.stderr(`error: ${redact(describeError(error))}\n${stack}`);
    return 1;
  }
}
