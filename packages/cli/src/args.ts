// Command-line parsing with commander: one table of subcommands and their flags, which builds the
// parser, each subcommand's `--help` and the flag reference in docs/cli.md. Every argument is
// used or refused: unknown flags (long or short), stray positional arguments, a flag given twice,
// and `--section.field` overrides of config sections the subcommand does not read are errors.
//
// `--section.field VALUE` (a dotted config path) is the config-override grammar of shears, not a
// flag commander could know: those tokens are taken out first, checked against the sections the
// subcommand reads, and typed by the config schema when the config is loaded.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '@shears/core';
import { closestName } from '@shears/core/internal';
import { Command, InvalidArgumentError as CommanderArgumentError, CommanderError, Option } from 'commander';

export type CommandName =
  | 'process'
  | 'serve'
  | 'evaluate'
  | 'api'
  | 'train'
  | 'view'
  | 'export'
  | 'prepare'
  | 'doctor'
  | 'schema';

export interface FlagSpec {
  /** Long name without the dashes (`max-groups`); a switch named `no-x` sets its config field to false. */
  name: string;
  /** Placeholder of its value (`N`, `FILE`); absent for a switch. */
  value?: string;
  description: string;
  /** The config field the flag sets (`run.groups`); absent for flags the command reads itself. */
  config?: string;
  /** Keep the value as text (a string setting typed `unknown` in the schema, such as `env.settings.tasks`). */
  literal?: boolean;
}

export interface CommandSpec {
  name: CommandName;
  summary: string;
  /** A positional argument the command takes (`view` and `export`). */
  argument?: { name: string; description: string };
  /** Config fields (sections or dotted prefixes) the command reads; `--a.b` overrides must fall inside. */
  reads: readonly string[];
  flags: readonly FlagSpec[];
  examples: readonly string[];
  /** Flags users try that this command does not have, with what to do instead. */
  refused?: Readonly<Record<string, string>>;
}

/** A dotted-path override as typed on the command line. */
export interface OverrideValue {
  text: string;
  /** The flag that set it (`--groups`, `--env.group_size`), for messages. */
  flag?: string;
  /** Keep it as text instead of typing it by the schema / as YAML. */
  literal?: boolean;
}

export interface ParsedArgs {
  command: CommandName;
  positionals: string[];
  /** Dotted config paths → their values as given. */
  overrides: Record<string, OverrideValue>;
  /** Flags that are not config fields (`config`, `resume`, `json`, `html`, `max-groups`, ...). */
  flags: Record<string, string | true>;
}

export type ParseOutcome = { kind: 'run'; args: ParsedArgs } | { kind: 'exit'; code: number };

const CONFIG: FlagSpec = {
  name: 'config',
  value: 'FILE',
  description: 'YAML or JSON config file (every section has defaults)',
};
const ENV_FLAGS: readonly FlagSpec[] = [
  {
    name: 'env',
    value: 'NAME',
    config: 'env.name',
    description:
      'environment id (built in: demo, tasks, swe, harness); required unless the config sets env.name',
  },
  {
    name: 'tasks',
    value: 'SPEC',
    config: 'env.settings.tasks',
    literal: true,
    description: "the env's task set (swe: bundled, a folder, a task-pack package)",
  },
  { name: 'group-size', value: 'N', config: 'env.group_size', description: 'rollouts per group' },
  { name: 'seed', value: 'N', config: 'env.seed', description: 'seed of the env and the demo policy' },
  { name: 'max-turns', value: 'N', config: 'env.max_turns', description: 'agent turns per rollout' },
  {
    name: 'plugins',
    value: 'LIST',
    config: 'plugins',
    description: 'plugin packages or paths to load, comma-separated',
  },
];
const SERVER_FLAGS: readonly FlagSpec[] = [
  {
    name: 'provider',
    value: 'ID',
    config: 'server.provider',
    description: 'inference server: scripted (the demo policy), openai, vllm, sglang, ...',
  },
  {
    name: 'base-url',
    value: 'URL',
    config: 'server.base_url',
    description: 'endpoint base URL ending in /v1',
  },
  { name: 'model', value: 'NAME', config: 'server.model', description: 'model name sent to the server' },
  {
    name: 'tokenizer',
    value: 'DIR',
    config: 'server.tokenizer',
    description: "folder with the model's tokenizer.json and tokenizer_config.json",
  },
];
const SANDBOX_FLAG: FlagSpec = {
  name: 'sandbox',
  value: 'ID',
  config: 'sandbox.provider',
  description: 'sandbox provider: local, docker, ssh',
};
const CONCURRENCY: FlagSpec = {
  name: 'concurrency',
  value: 'N',
  config: 'run.concurrency',
  description: 'rollouts in flight at once',
};
const PROGRESS: FlagSpec = {
  name: 'progress',
  value: 'MODE',
  config: 'run.progress',
  description: 'auto, bars, lines or none',
};
const NO_REPORT: FlagSpec = {
  name: 'no-report',
  config: 'run.report',
  description: 'write no HTML report next to the JSONL',
};
const NO_METRICS: FlagSpec = {
  name: 'no-metrics',
  config: 'run.metrics',
  description: 'write no run metrics stream (<out>.metrics.jsonl) next to the JSONL',
};
const API_LISTEN: readonly FlagSpec[] = [
  { name: 'host', value: 'ADDRESS', config: 'api.host', description: 'bind address of the trajectory API' },
  {
    name: 'port',
    value: 'N',
    config: 'api.port',
    description: 'port of the trajectory API (0: any free port)',
  },
];
const JSON_FLAG: FlagSpec = { name: 'json', description: 'print the result as one JSON object on stdout' };
/** What every command that runs rollouts reads. */
const ROLLOUT_CONFIG = ['plugins', 'env', 'server', 'sandbox', 'judge', 'group_judge'] as const;
/** The `run` fields every rollout loop uses (process also reads run.groups and run.out). */
const RUN_LOOP = [
  'run.concurrency',
  'run.max_retries',
  'run.progress',
  'run.advantage',
  'run.all_equal_scores',
  'run.drain_timeout_ms',
  'run.max_repeated_failures',
  'run.success_threshold',
  'run.metrics',
  'run.metrics_window_seconds',
];
const FORCE = (what: string): FlagSpec => ({ name: 'force', description: `overwrite ${what}` });
/** What a worker pushing to a trajectory API reads of `api`. */
const API_CLIENT = ['api.url', 'api.auth_token', 'api.poll_ms', 'api.wait_note_ms', 'api.off_policy_limit'];
/** What the trajectory API server reads of `api` (`shears api`, and `shears train` with start_api). */
const API_SERVER = [
  'api.host',
  'api.port',
  'api.database',
  'api.auth_token',
  'api.synchronous',
  'api.max_queued_groups',
  'api.max_queued_bytes',
  'api.max_request_bytes',
  'api.retry_after_seconds',
  'api.split_groups',
  'api.batch_order',
  'api.batch_size',
];
const OPEN_REFUSED = 'shears opens no browser; open the HTML file it names';
/** `--resume` on a command that cannot resume: refused, naming why and the commands that can. */
const RESUME_REFUSED = (command: string, why: string) =>
  `\`shears ${command}\` cannot resume (${why}); --resume is for \`shears process\` and \`shears evaluate\``;

/** Every subcommand, its flags and the config it reads: the one source of parser, help and docs. */
export const COMMAND_SPECS: readonly CommandSpec[] = [
  {
    name: 'process',
    summary: 'run N groups, write scored groups as JSONL and an HTML report',
    reads: [...ROLLOUT_CONFIG, 'run'],
    flags: [
      CONFIG,
      ...ENV_FLAGS,
      ...SERVER_FLAGS,
      SANDBOX_FLAG,
      { name: 'groups', value: 'N', config: 'run.groups', description: 'groups to run' },
      CONCURRENCY,
      { name: 'out', value: 'FILE', config: 'run.out', description: 'JSONL output path' },
      NO_REPORT,
      NO_METRICS,
      PROGRESS,
      { name: 'resume', description: 'keep the groups already in --out and run only the rest' },
      FORCE('an existing --out file (and its report and run record)'),
    ],
    examples: [
      'shears process --env demo --groups 4 --out runs/demo.jsonl',
      'shears process --config shears.yaml --env.group_size 8 --env.settings.only \'["count-lines"]\'',
    ],
    refused: {
      json: 'shears process writes its data to the JSONL at --out and prints a summary table',
      open: OPEN_REFUSED,
      k: '--k is for shears evaluate; shears process runs --group-size rollouts per group',
    },
  },
  {
    name: 'serve',
    summary: 'run groups continuously and push them to a trajectory API',
    reads: [
      ...ROLLOUT_CONFIG,
      ...RUN_LOOP,
      'run.out',
      'run.report',
      'run.prometheus',
      ...API_CLIENT,
      'api.batch_size',
      'loop',
      'evaluate.bootstrap_samples',
      'evaluate.confidence',
      'cluster',
    ],
    flags: [
      CONFIG,
      ...ENV_FLAGS,
      ...SERVER_FLAGS,
      SANDBOX_FLAG,
      CONCURRENCY,
      PROGRESS,
      {
        name: 'cluster',
        value: 'ray://HOST:PORT',
        config: 'cluster.address',
        description:
          'run the env workers on a Ray cluster (cluster.workers of them; docs/run-on-a-cluster.md)',
      },
      { name: 'url', value: 'URL', config: 'api.url', description: 'trajectory API to push groups to' },
      { name: 'out', value: 'FILE', config: 'run.out', description: 'JSONL copy of every group sent' },
      NO_REPORT,
      NO_METRICS,
      { name: 'max-groups', value: 'N', description: 'stop after N groups (default: run until Ctrl-C)' },
      FORCE('an existing run.out file and its report'),
    ],
    examples: [
      'shears serve --config shears.yaml --url http://127.0.0.1:8000',
      'shears serve --env demo --tokenizer ./models/Qwen3-8B --max-groups 100',
      'shears serve --config shears.yaml --cluster ray://10.0.0.1:6379 --cluster.workers 8',
    ],
    refused: {
      groups: 'shears serve runs until Ctrl-C; stop it after N groups with --max-groups N',
      resume: RESUME_REFUSED(
        'serve',
        "the groups it sent are already in the trajectory API's queue; start it again to send more",
      ),
    },
  },
  {
    name: 'evaluate',
    summary: 'k samples per task: pass@k, mean score with a bootstrap CI, per-task table',
    reads: [...ROLLOUT_CONFIG, ...RUN_LOOP, 'run.report', 'evaluate'],
    flags: [
      CONFIG,
      ...ENV_FLAGS,
      ...SERVER_FLAGS,
      SANDBOX_FLAG,
      { name: 'k', value: 'N', config: 'evaluate.k', description: 'samples per task' },
      {
        name: 'max-items',
        value: 'N',
        config: 'evaluate.max_items',
        description: 'evaluate at most N tasks',
      },
      CONCURRENCY,
      { name: 'out', value: 'FILE', config: 'evaluate.out', description: 'JSONL output path' },
      NO_REPORT,
      NO_METRICS,
      PROGRESS,
      {
        name: 'resume',
        description: 'keep the finished items of an interrupted run in --out, redo the rest',
      },
      { ...JSON_FLAG, description: 'print the evaluation summary as JSON on stdout' },
      FORCE('an existing --out file, its summary and report'),
    ],
    examples: [
      'shears evaluate --env demo --k 4',
      'shears evaluate --config eval.yaml --k 8 --resume --json',
    ],
    refused: {
      groups: 'shears evaluate runs every task of the evaluation set; limit it with --max-items N',
      open: OPEN_REFUSED,
    },
  },
  {
    name: 'api',
    summary: 'run the Atropos-compatible trajectory API server',
    reads: API_SERVER,
    flags: [CONFIG, ...API_LISTEN],
    examples: ['shears api --port 8000', 'shears api --config train.yaml --api.database :memory:'],
  },
  {
    name: 'train',
    summary: 'start the API, env workers and the trainer; supervise them',
    reads: [
      ...ROLLOUT_CONFIG,
      ...RUN_LOOP,
      'run.out',
      'run.report',
      'run.prometheus',
      'api',
      'train',
      'loop',
      'evaluate.bootstrap_samples',
      'evaluate.confidence',
      'cluster',
    ],
    flags: [
      CONFIG,
      ...ENV_FLAGS,
      ...SERVER_FLAGS,
      SANDBOX_FLAG,
      CONCURRENCY,
      PROGRESS,
      ...API_LISTEN,
      { name: 'out', value: 'FILE', config: 'run.out', description: 'JSONL copy of every group sent' },
      NO_REPORT,
      NO_METRICS,
      {
        name: 'workers',
        value: 'N',
        config: 'train.workers',
        description: 'env workers (serve loops) to start',
      },
      {
        name: 'output',
        value: 'DIR',
        config: 'train.output',
        description: 'folder for the trained model (train.reference); must not exist or be empty',
      },
      {
        name: 'cluster',
        value: 'ray://HOST:PORT',
        config: 'cluster.address',
        description:
          'run on a Ray cluster: the trainer on a node with cluster.trainer, cluster.workers env workers (docs/run-on-a-cluster.md)',
      },
      FORCE('an existing run.out file and its report'),
    ],
    examples: [
      'shears train --config train.yaml --output ./my-ft',
      'shears train --config train.yaml --workers 2 --port 0',
      'shears train --config train.yaml --output ./my-ft --cluster ray://10.0.0.1:6379 --cluster.trainer.gpus 1',
    ],
    refused: {
      resume: RESUME_REFUSED(
        'train',
        'the trainer keeps its own checkpoints; the trajectory API keeps its queue in api.database',
      ),
    },
  },
  {
    name: 'view',
    summary: 'build the HTML viewer and run dashboard from a JSONL file (--watch: serve it, updating live)',
    argument: { name: 'file', description: 'JSONL file of scored groups' },
    reads: ['server.tokenizer'],
    flags: [
      CONFIG,
      { name: 'html', value: 'FILE', description: 'where to write the HTML (default: FILE with .html)' },
      {
        name: 'tokenizer',
        value: 'DIR',
        config: 'server.tokenizer',
        description: 'show token text instead of ids in the token view',
      },
      FORCE('an existing HTML file that shears did not build'),
      {
        name: 'watch',
        description:
          'serve the page on 127.0.0.1 instead of writing it; it updates live as the run appends groups and metrics',
      },
      { name: 'port', value: 'N', description: 'port of the --watch server (default 0: any free port)' },
    ],
    examples: [
      'shears view runs/demo.jsonl',
      'shears view runs/train.jsonl --watch --port 8765',
      'shears view runs/train.jsonl --html /tmp/train.html --tokenizer ./models/Qwen3-8B',
    ],
    refused: {
      out: 'shears view writes the HTML to --html FILE',
      open: OPEN_REFUSED,
      resume: RESUME_REFUSED('view', 'it builds the whole viewer from the JSONL each time'),
    },
  },
  {
    name: 'export',
    summary:
      "write a run's scored groups as a dataset TRL's SFTTrainer, DPOTrainer or GRPOTrainer loads directly",
    argument: { name: 'file', description: 'JSONL file of scored groups (a run.out)' },
    reads: [],
    flags: [
      {
        name: 'format',
        value: 'FORMAT',
        description:
          'sft ({messages} per kept rollout), dpo ({prompt, chosen, rejected} per pair) or grpo ({prompt, task_id, task} per task)',
      },
      {
        name: 'out',
        value: 'FILE',
        description: 'where to write the JSONL (default: FILE with .FORMAT.jsonl)',
      },
      {
        name: 'tools',
        value: 'FILE',
        description:
          "sft, dpo: a JSON array of the env's tool definitions, added to each row as `tools` for the chat template",
      },
      { name: 'min-score', value: 'N', description: 'sft: keep rollouts scoring at least N' },
      {
        name: 'select',
        value: 'WHICH',
        description: 'sft: best (default: the best rollout of each group) or all',
      },
      { name: 'min-margin', value: 'N', description: 'dpo: the smallest chosen − rejected score difference' },
      {
        name: 'pairs',
        value: 'WHICH',
        description: 'dpo: best-worst (default: one pair per group) or all pairs with the margin',
      },
      FORCE('an existing --out file'),
    ],
    examples: [
      'shears export runs/demo.jsonl --format sft --tools tools.json',
      'shears export runs/demo.jsonl --format dpo --min-margin 0.5 --out runs/demo.dpo.jsonl',
      'shears export runs/demo.jsonl --format grpo',
    ],
    refused: {
      resume: RESUME_REFUSED('export', 'it reads the whole file each time'),
      open: OPEN_REFUSED,
    },
  },
  {
    name: 'prepare',
    summary:
      "build what the run needs ahead of it: the env's images, the docker sandbox image, the trainer's Python environment",
    reads: ['plugins', 'env', 'sandbox', 'train.reference', 'cluster'],
    flags: [
      CONFIG,
      ...ENV_FLAGS.filter((flag) => ['env', 'tasks', 'plugins'].includes(flag.name)),
      SANDBOX_FLAG,
      {
        name: 'trainer',
        description:
          "create the reference trainer's virtual environment (train.reference.venv) with its pinned versions",
      },
      {
        name: 'cluster',
        value: 'ENGINE',
        description:
          "with --trainer: install the cluster engine (ray, at the version of the cluster at cluster.address when one answers, else the pinned one) into the trainer's environment",
      },
    ],
    examples: [
      'shears prepare --sandbox docker',
      'shears prepare --env swe --tasks bundled',
      'shears prepare --trainer',
      'shears prepare --trainer --cluster ray --config train.yaml',
    ],
  },
  {
    name: 'doctor',
    summary:
      'check what the run will use: env, sandbox, Docker and its image, server, parsers, tokenizer, trainer',
    reads: ['plugins', 'env', 'server', 'sandbox', 'train.trainer', 'train.reference', 'cluster'],
    flags: [
      CONFIG,
      ...ENV_FLAGS,
      ...SERVER_FLAGS,
      SANDBOX_FLAG,
      {
        name: 'cluster',
        value: 'ray://HOST:PORT',
        config: 'cluster.address',
        description:
          'check a Ray cluster too: reachable, Ray version, nodes and resources, Docker on nodes, the driver Python',
      },
      { ...JSON_FLAG, description: 'print the checks as JSON' },
    ],
    examples: [
      'shears doctor --env demo',
      'shears doctor --config train.yaml --json',
      'shears doctor --env demo --cluster ray://10.0.0.1:6379',
    ],
  },
  {
    name: 'schema',
    summary: "print the config's JSON Schema",
    reads: [],
    flags: [],
    examples: ['shears schema > shears.schema.json'],
  },
];

function commandSpec(name: string): CommandSpec | undefined {
  return COMMAND_SPECS.find((spec) => spec.name === name);
}

/** Top-level config keys; a dotted override must start with one. */
const CONFIG_SECTIONS = [
  'plugins',
  'env',
  'server',
  'sandbox',
  'judge',
  'group_judge',
  'run',
  'api',
  'evaluate',
  'train',
  'loop',
  'cluster',
];

export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

const flagLabel = (flag: FlagSpec) => `--${flag.name}${flag.value ? ` <${flag.value}>` : ''}`;

function describeFlag(flag: FlagSpec): string {
  if (!flag.config) return flag.description;
  return `${flag.description} (${flag.config}${flag.name.startsWith('no-') ? ': false' : ''})`;
}

function readsText(spec: CommandSpec): string {
  return spec.reads.length === 0 ? 'none' : spec.reads.join(', ');
}

function helpAfter(spec: CommandSpec): string {
  const lines: string[] = [''];
  if (spec.reads.length > 0) {
    lines.push(
      `Config read: ${readsText(spec)}.`,
      `Any field in them can be set as --<section>.<field> VALUE (typed by the schema; values of`,
      `plugin settings are read as YAML: --env.settings.only '["a","b"]'). See docs/configuration.md.`,
      '',
    );
  }
  lines.push('Examples:', ...spec.examples.map((example) => `  ${example}`), '');
  return lines.join('\n');
}

/** Takes `--a.b VALUE` / `--a.b=VALUE` tokens out of argv (before a `--`). */
function extractDottedOverrides(argv: readonly string[]): {
  rest: string[];
  dotted: Array<{ path: string; text: string; flag: string }>;
} {
  const rest: string[] = [];
  const dotted: Array<{ path: string; text: string; flag: string }> = [];
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index]!;
    if (token === '--') {
      rest.push(...argv.slice(index));
      break;
    }
    const match = /^--([^=\s]+)(?:=([\s\S]*))?$/.exec(token);
    if (!match || !match[1]!.includes('.')) {
      rest.push(token);
      continue;
    }
    const path = match[1]!;
    const flag = `--${path}`;
    if (path.split('.').some((segment) => segment === '')) {
      throw new InvalidArgumentError({
        argument: flag,
        message: `${flag}: not a config path (write --section.field, e.g. --env.group_size 8)`,
      });
    }
    let text = match[2];
    if (text === undefined) {
      const next = argv[index + 1];
      if (next === undefined || next.startsWith('--')) {
        throw new InvalidArgumentError({
          argument: flag,
          message: `${flag} needs a value (write ${flag} VALUE, or ${flag}=VALUE for a value starting with --)`,
        });
      }
      text = next;
      index++;
    }
    dotted.push({ path, text, flag });
  }
  return { rest, dotted };
}

function covers(prefix: string, path: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`);
}

function checkOverridePath(spec: CommandSpec, path: string, flag: string): void {
  const section = path.split('.')[0]!;
  if (!CONFIG_SECTIONS.includes(section)) {
    const suggestion = closestName(section, CONFIG_SECTIONS);
    throw new InvalidArgumentError({
      argument: flag,
      message: `${flag}: unknown config section "${section}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; sections: ${CONFIG_SECTIONS.join(', ')}`,
    });
  }
  if (!spec.reads.some((prefix) => covers(prefix, path))) {
    throw new InvalidArgumentError({
      argument: flag,
      message: `${flag}: shears ${spec.name} does not read ${path} (it reads: ${readsText(spec)})`,
    });
  }
}

function buildProgram(io: { stdout(text: string): void; stderr(text: string): void }): {
  program: Command;
  chosen: () => { spec: CommandSpec; command: Command; operands: string[] } | undefined;
} {
  let chosen: { spec: CommandSpec; command: Command; operands: string[] } | undefined;
  const program = new Command('shears')
    .description('Reinforcement learning environments for tool-using LLM agents')
    .usage('<command> [flags] [--section.field value]')
    .version(cliVersion(), '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help (also: shears <command> --help)')
    .helpCommand('help [command]', 'show help for a command')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout(text),
      writeErr: (text) => io.stderr(text),
      // Errors are thrown and printed by runCli, with a hint.
      outputError: () => undefined,
    })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      [
        '',
        'Flags override the config file; --<section>.<field> VALUE sets any config field.',
        'Examples:',
        '  shears process --env demo --groups 4 --out runs/demo.jsonl',
        '  shears evaluate --config eval.yaml --k 8 --resume',
        '  shears view runs/demo.jsonl',
        '',
      ].join('\n'),
    );
  for (const spec of COMMAND_SPECS) {
    const command = program
      .command(spec.name)
      .description(spec.summary)
      .helpOption('-h, --help', `show the flags of shears ${spec.name}`);
    if (spec.argument) command.argument(`<${spec.argument.name}>`, spec.argument.description);
    for (const flag of spec.flags) {
      const option = new Option(flagLabel(flag), describeFlag(flag));
      if (flag.value) {
        option.argParser((value: string, previous: unknown) => {
          if (previous !== undefined)
            throw new CommanderArgumentError(`given twice (${String(previous)} and ${value})`);
          return value;
        });
      }
      command.addOption(option);
    }
    command.addHelpText('after', helpAfter(spec));
    command.action((...parameters: unknown[]) => {
      const operands = spec.argument ? [String(parameters[0])] : [];
      chosen = { spec, command, operands };
    });
  }
  return { program, chosen: () => chosen };
}

function refusedHint(spec: CommandSpec | undefined, message: string): string {
  const flag = /unknown option '--?([^'=]+)/.exec(message)?.[1];
  const hint = flag ? spec?.refused?.[flag] : undefined;
  return hint ? `; ${hint}` : '';
}

/** Parses argv; prints help or the version itself (outcome `exit`). Bad arguments throw InvalidArgumentError. */
export function parseArgs(
  argv: readonly string[],
  io: { stdout(text: string): void; stderr(text: string): void } = {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  },
): ParseOutcome {
  const { rest, dotted } = extractDottedOverrides(argv);
  const { program, chosen } = buildProgram(io);
  if (argv.length === 0) {
    io.stderr(program.helpInformation());
    return { kind: 'exit', code: 2 };
  }
  // The subcommand named first, for messages about its flags.
  const named = commandSpec(rest.find((token) => !token.startsWith('-')) ?? '');
  try {
    program.parse(rest, { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
      return { kind: 'exit', code: 0 };
    // `shears help X` exits 0; help shown because no command was given is a usage error.
    if (error.code === 'commander.help') return { kind: 'exit', code: error.exitCode === 0 ? 0 : 2 };
    const message = error.message.replace(/^error: /, '').replace(/\n/g, ' ');
    const where = named ? `shears ${named.name} --help` : 'shears --help';
    const hint = refusedHint(named, message);
    // A refused flag's own hint says what to use instead; commander's nearest-name guess (`--out`:
    // "Did you mean --port?") would only mislead beside it.
    let text = hint ? `${message.replace(/ \(Did you mean [^)]*\)/, '')}${hint}` : message;
    if (error.code === 'commander.unknownCommand')
      text = `${message}; commands: ${COMMAND_SPECS.map((spec) => spec.name).join(', ')}`;
    if (error.code === 'commander.excessArguments' && named) {
      const given = program.commands.find((command) => command.name() === named.name)?.args ?? [];
      const extra = given.slice(named.argument ? 1 : 0).map((arg) => JSON.stringify(arg));
      text = named.argument
        ? `shears ${named.name} takes one ${named.argument.name} argument; also got ${extra.join(' ')}`
        : `shears ${named.name} takes no positional arguments, got ${extra.join(' ')}${named.reads.length ? ' (give a config file with --config FILE)' : ''}`;
    }
    throw new InvalidArgumentError({ argument: error.code, message: `${text} (see ${where})` });
  }
  const picked = chosen();
  if (!picked) {
    io.stderr(program.helpInformation());
    return { kind: 'exit', code: 2 };
  }
  const { spec, command, operands } = picked;
  const overrides: Record<string, OverrideValue> = {};
  const setOverride = (path: string, value: OverrideValue) => {
    const previous = overrides[path];
    if (previous && previous.text !== value.text)
      throw new InvalidArgumentError({
        argument: value.flag ?? path,
        message: `${path} is set twice: ${previous.flag} ${previous.text} and ${value.flag} ${value.text} (give it once)`,
      });
    overrides[path] = value;
  };
  const flags: Record<string, string | true> = {};
  for (const option of command.options) {
    const attribute = option.attributeName();
    if (command.getOptionValueSource(attribute) !== 'cli') continue;
    const flag = spec.flags.find((entry) => flagLabel(entry) === option.flags)!;
    const value = command.getOptionValue(attribute) as string | boolean;
    if (flag.config) {
      const text = flag.name.startsWith('no-') ? 'false' : String(value);
      setOverride(flag.config, { text, flag: `--${flag.name}`, ...(flag.literal ? { literal: true } : {}) });
    } else flags[flag.name] = typeof value === 'string' ? value : true;
  }
  for (const { path, text, flag } of dotted) {
    checkOverridePath(spec, path, flag);
    setOverride(path, { text, flag });
  }
  return { kind: 'run', args: { command: spec.name, positionals: operands, overrides, flags } };
}

/** The flag reference in Markdown (docs/cli.md is this text; a test keeps them equal). */
export function renderCliReference(): string {
  const lines = [
    '# Command-line reference',
    '',
    '<!-- Generated from packages/cli/src/args.ts (COMMAND_SPECS); a test keeps it in sync. -->',
    '',
    'Every subcommand prints this with `shears <command> --help`. `shears --version` prints the',
    'version. An unknown flag, a flag given twice, a positional argument a command does not take, or',
    'an override of a config section the command does not read is an error (exit 2): nothing is',
    'ignored.',
    '',
    'Flags override the config file. Any config field of the sections a command reads can also be',
    'set as `--<section>.<field> VALUE` (or `--<section>.<field>=VALUE`): the value is typed by the',
    'config schema (numbers, booleans, comma-separated lists, or YAML flow such as `[a, b]`), and',
    'values of plugin settings (`env.settings.*`, `server.settings.*`, ...) are read as YAML, so',
    '`--env.settings.only \'["count-lines"]\'` is a list and `--env.settings.maxTurns 1` a number,',
    'exactly as in a config file. Setting one field twice (`--groups 2 --run.groups 3`) is an error.',
    '',
    'Exit codes: 0 success, 1 a run or a check failed, 2 bad arguments or config, 130 interrupted.',
    '',
  ];
  for (const spec of COMMAND_SPECS) {
    const summary = `${spec.summary.charAt(0).toUpperCase()}${spec.summary.slice(1)}.`;
    lines.push(`## shears ${spec.name}${spec.argument ? ` <${spec.argument.name}>` : ''}`, '', summary, '');
    if (spec.argument) lines.push(`\`<${spec.argument.name}>\`: ${spec.argument.description}.`, '');
    if (spec.flags.length > 0) {
      lines.push('| flag | config field | what it does |', '|---|---|---|');
      for (const flag of spec.flags)
        lines.push(
          `| \`${flagLabel(flag)}\` | ${flag.config ? `\`${flag.config}\`${flag.name.startsWith('no-') ? ' = false' : ''}` : '–'} | ${flag.description} |`,
        );
      lines.push('');
    } else lines.push('No flags.', '');
    lines.push(
      `Config read: ${spec.reads.length ? spec.reads.map((section) => `\`${section}\``).join(', ') : 'none'}.`,
      '',
    );
    lines.push('```sh', ...spec.examples, '```', '');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
