// The `shears` command: parses arguments, loads the config, and dispatches to a subcommand.
// `runCli` is what the bin calls and what end-to-end tests call in-process.

import { setMaxListeners } from 'node:events';
import { resolve } from 'node:path';
import { ConfigError, describeError, InvalidArgumentError, ShearsError } from '@shears/core';
import { parseArgs } from './args.js';
import { loadConfig } from './config/load-config.js';
import { type CliIo, createCliLogger, processIo } from './io.js';
import { collectSecrets, createRedactor, type Redactor, weakSecretsWarning } from './redact.js';
import type { CommandContext } from './runtime.js';

type Command = (context: CommandContext) => Promise<number>;

const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  process: {
    summary: 'run N groups, write JSONL and an HTML report',
    load: async () => (await import('./commands/process.js')).processCommand,
  },
  serve: {
    summary: 'run continuously and push groups to a trajectory API',
    load: async () => (await import('./commands/serve.js')).serveCommand,
  },
  evaluate: {
    summary: 'k samples per task: pass@k, mean score with CIs, per-task table',
    load: async () => (await import('./commands/evaluate.js')).evaluateCommand,
  },
  api: {
    summary: 'run the Atropos-compatible trajectory API server',
    load: async () => (await import('./commands/api.js')).apiCommand,
  },
  train: {
    summary: 'start the API, env workers and the trainer; supervise them',
    load: async () => (await import('./commands/train.js')).trainCommand,
  },
  view: {
    summary: 'build the static HTML viewer from a JSONL file',
    load: async () => (await import('./commands/view.js')).viewCommand,
  },
  prepare: {
    summary: "build what the env needs before a run (the SWE env's images), with progress",
    load: async () => (await import('./commands/prepare.js')).prepareCommand,
  },
  doctor: {
    summary:
      'check what the run will use: Node, the env, the sandbox host, Docker, the inference server, parsers, tokenizer',
    load: async () => (await import('./commands/doctor.js')).doctorCommand,
  },
  schema: {
    summary: "print the config's JSON Schema",
    load: async () => (await import('./commands/schema.js')).schemaCommand,
  },
};

export const USAGE = `Usage: shears <command> [--config shears.yaml] [--flag value] [--section.field value]

Commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(9)} ${command.summary}`)
  .join('\n')}

Examples:
  shears process --env demo --groups 4 --out runs/demo.jsonl
  shears evaluate --config eval.yaml --k 8 --resume
  shears view runs/demo.jsonl
`;

export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let redact: Redactor = createRedactor([]);
  try {
    const args = parseArgs(argv);
    if (args.flags.help || !args.command || args.command === 'help') {
      io.stdout(USAGE);
      return args.command || args.flags.help ? 0 : 2;
    }
    const command = COMMANDS[args.command];
    if (!command) {
      throw new InvalidArgumentError({
        argument: 'command',
        value: args.command,
        message: `Unknown command "${args.command}" (available: ${Object.keys(COMMANDS).join(', ')})`,
      });
    }
    const configPath = typeof args.flags.config === 'string' ? args.flags.config : undefined;
    const loaded = loadConfig({
      path: configPath === undefined ? undefined : resolve(io.cwd, configPath),
      overrides: args.overrides,
      environment: io.env,
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
    const run = await command.load();
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
