// `shears doctor`: checks what the configured run will use — Node, the env, the sandbox backend
// it resolves to and the env, each through the provider's own `check()` (the docker sandbox pings
// its daemons and looks for its image, the ssh sandbox reads the host's banner and logs in, the
// local one opens a sandbox, the SWE env pings the daemon that builds its images; a provider
// without a check gets a real sandbox opened), the inference server, the tool-call parsers, the
// tokenizer folder serve/train need, the trainer command of `shears train` (or the reference
// trainer's Python environment: it runs, imports, has the pinned versions), and the plugins — and
// says what to fix. With a cluster section (`--cluster ray://HOST:PORT`), the Ray cluster too:
// reachable, Ray and Python versions, nodes and resources, Docker on nodes, the driver's Python.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  type EnvV1,
  InvalidSettingsError,
  type PluginCheckResult,
  probeSandboxProvider,
  type SandboxProviderV1,
  type SandboxV1,
  type ServerV1,
} from '@shears/core';
import { createHfTokenizer } from '@shears/servers';
import { wandbCheck } from '../metrics/wandb.js';
import { envEntry, envSettings } from '../plan/env-plan.js';
import {
  MANAGED_SERVERS,
  parserIds,
  recordsLogprobs,
  resolveSandbox,
  resolveServer,
} from '../plan/server-plan.js';
import { importBuiltins } from '../plugin-packages.js';
import {
  createEnv,
  createSandboxProvider,
  createServer,
  resolveParsers,
  sandboxProviderId,
  sandboxSettings,
} from '../runtime/compose.js';
import { composeRegistry, type RunRegistry } from '../runtime/registry.js';
import { inspectImage, openDocker, SANDBOX_BASE_IMAGE } from '../sandbox-image.js';
import { clusterChecks } from '../serve/cluster-doctor.js';
import type { CommandContext } from '../session.js';
import { referencePython, trainerSource } from '../train/reference-trainer.js';
import { probeTrainerPython, trainerPins, versionMismatches } from '../train/trainer-env.js';

type Check = PluginCheckResult;

function nodeCheck(): Check {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const ok = major > 20 || (major === 20 && minor >= 19);
  return ok
    ? { name: 'node', status: 'ok', detail: `Node ${process.versions.node}` }
    : {
        name: 'node',
        status: 'fail',
        detail: `Node ${process.versions.node}`,
        fix: 'install Node 20.19 or newer (e.g. from nodejs.org or nvm install 20)',
      };
}

function firstLine(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0] ?? String(error);
}

/**
 * What a provider's own `check()` says about the settings the config gives it (the sandbox
 * backend, the env); a settings error becomes one failed line naming the fields. Undefined when
 * the provider has no check.
 */
async function providerCheck(
  context: CommandContext,
  registry: RunRegistry,
  target: {
    kind: 'sandboxes' | 'envs';
    id: string;
    settings: Record<string, unknown>;
    settingsField: string;
  },
): Promise<Check[] | undefined> {
  const name = target.kind === 'sandboxes' ? 'sandbox' : 'env';
  try {
    const results = await registry.registry.check(target.kind, target.id, target.settings, {
      env: context.io.env,
      signal: context.signal,
      settingsField: target.settingsField,
    });
    return results?.map((result) => ({ ...result, detail: context.redact(result.detail) }));
  } catch (error) {
    const detail = InvalidSettingsError.isInstance(error)
      ? error.issues.map((issue) => `${target.settingsField}.${issue.path}: ${issue.message}`).join('; ')
      : firstLine(error);
    return [
      {
        name,
        status: 'fail',
        detail: context.redact(`${target.id}: ${detail}`),
        fix: `fix ${target.settingsField}`,
      },
    ];
  }
}

/** The sandbox backend: its own check() (local, ssh, docker do), else one real sandbox opened. */
async function sandboxChecks(
  context: CommandContext,
  registry: RunRegistry,
  env: EnvV1 | undefined,
  id: string,
): Promise<Check[]> {
  let settings: Record<string, unknown>;
  try {
    settings = sandboxSettings(resolveSandbox(context.config), id);
  } catch (error) {
    return [
      { name: 'sandbox', status: 'fail', detail: context.redact(firstLine(error)), fix: 'fix sandbox.*' },
    ];
  }
  const own = await providerCheck(context, registry, {
    kind: 'sandboxes',
    id,
    settings,
    settingsField: 'sandbox.settings',
  });
  if (!own) {
    const opened = await probeSandboxProvider(
      () => createSandboxProvider(registry, resolveSandbox(context.config), env),
      {
        id,
        fix: 'check sandbox.settings',
        signal: context.signal,
      },
    );
    return [{ ...opened, detail: context.redact(opened.detail) }];
  }
  // An env with images of its own (swe builds them in `shears prepare`) does not start from the
  // sandbox's default image.
  const checks = ownImages(env) ? own.filter((check) => !check.name.startsWith('image ')) : own;
  return Promise.all(checks.map((check) => baseImageRecipeCheck(check)));
}

function ownImages(env: EnvV1 | undefined): boolean {
  return (env as { preferredSandbox?: unknown } | undefined)?.preferredSandbox === 'docker';
}

/**
 * The docker sandbox's default image is built by `shears prepare` from this version's recipe: say
 * how to build it when it is missing, and warn when the one there came from another recipe.
 */
async function baseImageRecipeCheck(check: Check & { host?: string }): Promise<Check> {
  if (!check.name.startsWith('image ') || !check.host || !check.detail.startsWith(`${SANDBOX_BASE_IMAGE} `))
    return check;
  if (check.status === 'fail')
    return {
      ...check,
      fix: 'run `shears prepare --sandbox docker` (builds it with debootstrap once, then imports it; needs root)',
    };
  try {
    if ((await inspectImage((await openDocker(check.host)).docker, SANDBOX_BASE_IMAGE)) !== 'outdated')
      return check;
  } catch {
    return check;
  }
  return {
    name: check.name,
    status: 'warn',
    detail: `${SANDBOX_BASE_IMAGE} was built from another recipe than this version of shears uses (python3, git, CA certificates on bookworm)`,
    fix: 'run `shears prepare --sandbox docker` (builds it with debootstrap once, then imports it; needs root)',
  };
}

/**
 * Lines about the same Docker daemon from several providers (the docker sandbox and an env that
 * builds images) become one, naming every user: `... (used by A, B)`.
 */
function mergeDaemonChecks(checks: Check[]): Check[] {
  const merged: Check[] = [];
  for (const check of checks) {
    const same = check.name.startsWith('docker ')
      ? merged.find((other) => other.name === check.name && other.status === check.status)
      : undefined;
    const usedBy = /\(used by (.*)\)$/.exec(check.detail)?.[1];
    if (same && usedBy && same.detail.endsWith(')')) same.detail = `${same.detail.slice(0, -1)}, ${usedBy})`;
    else merged.push({ ...check });
  }
  return merged;
}

/** Loads server.tokenizer the way `shears serve`/`train` and the vllm/sglang servers do. */
function tokenizerCheck(path: string | undefined, cwd: string, provider: string): Check {
  if (!path)
    return MANAGED_SERVERS.includes(provider)
      ? {
          name: 'tokenizer',
          status: 'fail',
          detail: `no server.tokenizer: the ${provider} server turns chats into token ids itself and cannot run without the model's tokenizer`,
          fix: "set server.tokenizer to the model's folder holding tokenizer.json and tokenizer_config.json (e.g. its Hugging Face snapshot)",
        }
      : {
          name: 'tokenizer',
          status: 'warn',
          detail:
            'no server.tokenizer: `shears process` and `evaluate` work, but `shears serve` and `train` cannot send groups to a trainer, which trains on token ids, not text',
          fix: "for serve/train, set server.tokenizer to the model's folder holding tokenizer.json and tokenizer_config.json (e.g. its Hugging Face snapshot)",
        };
  const full = resolve(cwd, path);
  const fix =
    "point server.tokenizer at the model's folder holding tokenizer.json and tokenizer_config.json (e.g. its Hugging Face snapshot)";
  if (existsSync(full) && statSync(full).isFile())
    return {
      name: 'tokenizer',
      status: 'fail',
      detail: `${full} is a file; server.tokenizer is the folder with tokenizer.json and tokenizer_config.json`,
      fix: `set server.tokenizer to ${dirname(path)} (it must also hold tokenizer_config.json)`,
    };
  let tokenizer: ReturnType<typeof createHfTokenizer>;
  try {
    tokenizer = createHfTokenizer({ dir: full });
  } catch (error) {
    return { name: 'tokenizer', status: 'fail', detail: firstLine(error), fix };
  }
  try {
    const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'ping' }], {
      addGenerationPrompt: true,
    });
    const tokens = tokenizer.encode(prompt, { addSpecialTokens: false }).length;
    return {
      name: 'tokenizer',
      status: 'ok',
      detail: `${full}: the chat template renders and encodes (${tokens} tokens for a one-line prompt)`,
    };
  } catch (error) {
    return {
      name: 'tokenizer',
      status: 'fail',
      detail: `${full}: the chat template does not render: ${firstLine(error)}`,
      fix: "the folder needs the model's chat template: chat_template.jinja (as transformers 5 saves it) or chat_template in tokenizer_config.json",
    };
  }
}

/** `train.trainer`: the command `shears train` starts, found on PATH (or as a path), and its cwd. */
function trainerCheck(
  config: CommandContext['config'],
  cwd: string,
  vars: Record<string, string | undefined>,
): Check {
  const trainer = config.train.trainer;
  if (!trainer)
    return {
      name: 'trainer',
      status: 'skip',
      detail: 'no train.trainer.command (only `shears train` needs one)',
    };
  const folder = trainer.cwd ? resolve(cwd, trainer.cwd) : cwd;
  if (!existsSync(folder) || !statSync(folder).isDirectory())
    return {
      name: 'trainer',
      status: 'fail',
      detail: `train.trainer.cwd ${folder} is not a folder`,
      fix: 'point train.trainer.cwd at the folder the trainer runs in (relative to where shears runs)',
    };
  const program = trainer.command[0]!;
  const candidates = program.includes('/')
    ? [resolve(folder, program)]
    : (vars.PATH ?? process.env.PATH ?? '').split(delimiter).map((entry) => join(entry, program));
  const found = candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  });
  return found
    ? {
        name: 'trainer',
        status: 'ok',
        detail: `${found} (train.trainer.command); it gets SHEARS_API_URL and ATROPOS_SERVER_URL`,
      }
    : {
        name: 'trainer',
        status: 'fail',
        detail: `train.trainer.command: "${program}" is not an executable ${program.includes('/') ? 'file' : 'on PATH'}`,
        fix: 'install the trainer (e.g. python3) or fix train.trainer.command / train.trainer.cwd',
      };
}

/** `train.reference`: the trainer's interpreter runs, torch and shears_trainer import, pinned versions. */
async function referenceTrainerCheck(
  config: CommandContext['config'],
  cwd: string,
  vars: Record<string, string | undefined>,
): Promise<Check> {
  const reference = config.train.reference!;
  const python = referencePython(reference, cwd);
  const fix = reference.python
    ? 'install the trainer into train.reference.python (pip install ./trainers[lora]), or remove train.reference.python and run `shears prepare --trainer`'
    : 'run `shears prepare --trainer` (creates train.reference.venv with the pinned versions)';
  if (python.includes('/') && !existsSync(python))
    return { name: 'trainer', status: 'fail', detail: `the trainer's Python ${python} does not exist`, fix };
  const probe = await probeTrainerPython(python);
  if (typeof probe === 'string') return { name: 'trainer', status: 'fail', detail: probe, fix };
  if (probe.imports !== true)
    return {
      name: 'trainer',
      status: 'fail',
      detail: `${python} (Python ${probe.python}) cannot import the trainer: ${probe.imports}`,
      fix,
    };
  const source = trainerSource(vars);
  const mismatches = source ? versionMismatches(probe, trainerPins(source)) : [];
  const versions = ['torch', 'transformers', 'shears-trainer']
    .map((name) => `${name} ${probe.versions[name]}`)
    .join(', ');
  if (mismatches.length > 0)
    return {
      name: 'trainer',
      status: 'fail',
      detail: `${python}: ${mismatches.join(', ')}`,
      fix,
    };
  return {
    name: 'trainer',
    status: 'ok',
    detail: `${python}: Python ${probe.python}, ${versions}${source ? ' (the pinned versions)' : ' (pins not checked: trainers/ not found; set SHEARS_TRAINER_SOURCE)'}`,
  };
}

/** `train.trainer.needs_inference_logprobs`: does the configured server record them? */
function trainerLogprobsCheck(config: CommandContext['config']): Check | undefined {
  if (!config.train.trainer?.needs_inference_logprobs) return undefined;
  const provider = config.server.provider;
  const records = recordsLogprobs(provider);
  if (records === true)
    return {
      name: 'trainer logprobs',
      status: 'ok',
      detail: `the trainer needs inference logprobs and server.provider "${provider}" records every generated token's logprob`,
    };
  if (records === false)
    return {
      name: 'trainer logprobs',
      status: 'fail',
      detail: `the trainer needs inference logprobs (train.trainer.needs_inference_logprobs) but server.provider "${provider}" is a chat (phase-1) server: the trainer would get inference_logprobs null`,
      fix: 'use a token-in/token-out server (server.provider vllm or sglang, with server.tokenizer), or set train.trainer.needs_inference_logprobs: false if the trainer does not read them',
    };
  return {
    name: 'trainer logprobs',
    status: 'warn',
    detail: `server.provider "${provider}" comes from a plugin: \`shears train\` refuses it before the first rollout unless it is a token-in/token-out server that records logprobs`,
  };
}

async function parserCheck(registry: RunRegistry, context: CommandContext): Promise<Check> {
  const { tool_parser: parser, fallback_parser: fallback } = context.config.server;
  try {
    await resolveParsers(registry, parserIds(context.config));
  } catch (error) {
    return {
      name: 'parsers',
      status: 'fail',
      detail: firstLine(error),
      fix: 'use a parser name from the list, or add the package that provides it to "plugins"',
    };
  }
  return {
    name: 'parsers',
    status: 'ok',
    detail: parser
      ? `tool calls are parsed from the text with ${parser} when the server returns none`
      : fallback === 'none'
        ? 'only native tool calls are used (fallback_parser: none)'
        : `text with <tool_call> and no native calls is parsed with ${fallback}`,
  };
}

async function serverCheck(context: CommandContext, registry: RunRegistry): Promise<Check> {
  const { config } = context;
  try {
    const server = await createServer(
      registry,
      resolveServer(config, { apiKey: context.apiKey, cwd: context.io.cwd }),
    );
    try {
      const started = Date.now();
      const response = await server.chat({
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: 4,
        timeoutMs: 15_000,
        signal: context.signal,
      });
      const ms = Date.now() - started;
      return {
        name: 'inference',
        status: response.choices.length ? 'ok' : 'fail',
        detail: `${server.provider} ${server.model} answered a chat request in ${ms} ms`,
      };
    } finally {
      await server.close?.();
    }
  } catch (error) {
    const where = config.server.base_url ?? config.server.provider;
    return {
      name: 'inference',
      status: 'fail',
      detail: context.redact(firstLine(error)),
      fix: `check that the server at ${where} is running, server.model is served there, and the API key (server.api_key / api_key_env) is right`,
    };
  }
}

/**
 * `train`'s starting model (train.reference.model): a Hugging Face model folder here. A hub id is
 * named with the command that downloads it; shears downloads none.
 */
function startingModelCheck(model: string, cwd: string): Check {
  const folder = resolve(cwd, model);
  if (existsSync(join(folder, 'config.json')))
    return { name: 'model', status: 'ok', detail: `${folder} (train.reference.model) holds config.json` };
  const hubId = !existsSync(folder) && /^[\w.-]+\/[\w.-]+$/.test(model) && !model.startsWith('.');
  return {
    name: 'model',
    status: 'fail',
    detail: existsSync(folder)
      ? `${folder} (train.reference.model) holds no config.json: not a Hugging Face model folder`
      : `train.reference.model "${model}" does not exist (resolved: ${folder})`,
    fix: hubId
      ? `shears downloads no models: \`hf download ${model} --local-dir ./models/${model.split('/')[1]}\`, then name that folder`
      : 'name the folder that holds the starting model (config.json, safetensors, tokenizer)',
  };
}

const execFileAsync = promisify(execFile);

/**
 * The harness env's program answers its own version command (`qwen --version`) on this machine,
 * with `bin` first on PATH as a rollout has it: a harness that cannot start would fail every
 * rollout. Only for the local sandbox (elsewhere the program runs in the sandbox's image).
 */
async function harnessCheck(
  env: EnvV1,
  context: Pick<CommandContext, 'config' | 'io'>,
  sandboxId: string,
): Promise<Check | undefined> {
  const { config } = context;
  const vars = context.io.env;
  const harness = env as EnvV1 & { preset?: { id: string; command: string; package: string } | null };
  if (env.id !== 'harness' || harness.preset === undefined) return undefined;
  const settings = config.env.settings as { bin?: string; command?: string; program?: unknown };
  const command = settings.command ?? harness.preset?.command;
  if (typeof command !== 'string') return undefined;
  const program = command.trim().split(/\s+/)[0]!;
  const label = harness.preset ? `harness ${harness.preset.id}` : 'harness';
  if (sandboxId !== 'local')
    return {
      name: label,
      status: 'skip',
      detail: `${program} runs in the ${sandboxId} sandbox's image; not checked here`,
    };
  const path = settings.bin ? `${settings.bin}${delimiter}${vars.PATH ?? ''}` : (vars.PATH ?? '');
  try {
    const { stdout, stderr } = await execFileAsync(program, ['--version'], {
      timeout: 30_000,
      env: { ...vars, PATH: path, NO_COLOR: '1', CI: '1' },
    });
    const version = `${stdout}${stderr}`.trim().split('\n')[0] ?? '';
    return {
      name: label,
      status: 'ok',
      detail: `${program} --version: ${version}${settings.bin ? ` (bin ${settings.bin})` : ''}`,
    };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const output =
      `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`.trim();
    return {
      name: label,
      status: 'fail',
      detail:
        code === 'ENOENT'
          ? `${program} not found${settings.bin ? ` in bin ${settings.bin} or` : ''} on PATH: every rollout would fail to start`
          : `${program} --version failed (${String(code ?? (error as Error).message)}): ${output.slice(-300)}`,
      fix: harness.preset
        ? `install it (npm install ${harness.preset.package}) and point env.settings.bin at its folder (e.g. ./node_modules/.bin, read against the config file's folder)`
        : 'install the program the harness command starts, or fix env.settings.command / bin',
    };
  }
}

/** What the harness env offers `shears doctor` (see HarnessEnv.probeGateway in @shears/gateway). */
type GatewayProbing = EnvV1 & {
  probeGateway(options: {
    server: ServerV1;
    sandbox: SandboxV1;
    signal?: AbortSignal;
  }): Promise<{ status: Check['status']; detail: string; fix?: string }>;
};

/**
 * The harness reaches the gateway from where it runs: a sandbox of the run's provider is opened as
 * a rollout's would be (the env's spec, its reach), and the gateway a rollout would start is asked
 * from inside it with the harness's environment. A harness that cannot reach it would fail every
 * rollout before its first model request. No model request is made (the gateway is in front of a
 * server that is never called).
 */
async function harnessGatewayCheck(
  env: EnvV1,
  context: CommandContext,
  registry: RunRegistry,
): Promise<Check | undefined> {
  const probing = env as Partial<GatewayProbing>;
  if (typeof probing.probeGateway !== 'function') return undefined;
  const name = 'harness gateway';
  const server: ServerV1 = {
    specificationVersion: 'v1',
    provider: 'doctor',
    model: context.config.server.model ?? 'shears-doctor',
    async chat() {
      throw new Error('shears doctor makes no model request');
    },
  };
  let provider: SandboxProviderV1 | undefined;
  let sandbox: SandboxV1 | undefined;
  try {
    provider = await createSandboxProvider(registry, resolveSandbox(context.config), env);
    const item = await env.nextItem();
    sandbox = await provider.acquire(item && env.sandboxSpec ? env.sandboxSpec(item) : undefined, {
      signal: context.signal,
    });
    const probe = await probing.probeGateway({ server, sandbox, signal: context.signal });
    return { name, ...probe, detail: context.redact(probe.detail) };
  } catch (error) {
    return {
      name,
      status: 'fail',
      detail: `could not open a sandbox to probe the gateway from: ${context.redact(firstLine(error))}`,
      fix: 'fix the sandbox (see the sandbox check above)',
    };
  } finally {
    await sandbox?.dispose().catch(() => undefined);
    await provider?.close().catch(() => undefined);
  }
}

async function runChecks(context: CommandContext): Promise<Check[]> {
  const { config } = context;
  const checks: Check[] = [nodeCheck()];
  const registry = await composeRegistry(config, {
    cwd: context.io.cwd,
    logger: context.logger,
    imported: await importBuiltins(context.io.cwd),
  });
  const { plugins } = registry;
  let env: EnvV1 | undefined;
  try {
    env = await createEnv(registry, envEntry(config, context.io.cwd));
    checks.push({ name: 'env', status: 'ok', detail: `${config.env.name} created` });
  } catch (error) {
    checks.push({
      name: 'env',
      status: 'fail',
      detail: context.redact(firstLine(error)),
      fix: 'fix env.name / env.settings',
    });
  }
  try {
    const sandboxId = sandboxProviderId(config.sandbox, env);
    const own = [
      ...(await sandboxChecks(context, registry, env, sandboxId)),
      ...(env
        ? ((await providerCheck(context, registry, {
            kind: 'envs',
            id: config.env.name!, // env was created: it has a name
            settings: envSettings(config, context.io.cwd),
            settingsField: 'env.settings',
          })) ?? [])
        : []),
    ];
    checks.push(...mergeDaemonChecks(own));
    if (!own.some((check) => check.name.startsWith('docker')) && sandboxId !== 'docker')
      checks.push({
        name: 'docker',
        status: 'skip',
        detail: `not needed (sandbox ${sandboxId}, env ${config.env.name})`,
      });
    const harness = env ? await harnessCheck(env, context, sandboxId) : undefined;
    if (harness) checks.push(harness);
    const reach = env ? await harnessGatewayCheck(env, context, registry) : undefined;
    if (reach) checks.push(reach);
    if (config.train.reference) checks.push(startingModelCheck(config.train.reference.model, context.io.cwd));
    checks.push(await serverCheck(context, registry));
    checks.push(await parserCheck(registry, context));
    checks.push(tokenizerCheck(config.server.tokenizer, context.io.cwd, config.server.provider));
    checks.push(
      config.train.reference
        ? await referenceTrainerCheck(config, context.io.cwd, context.io.env)
        : trainerCheck(config, context.io.cwd, context.io.env),
    );
    const logprobs = trainerLogprobsCheck(config);
    if (logprobs) checks.push(logprobs);
    if (config.wandb) checks.push(wandbCheck(config, context.io.env));
    checks.push(...(await clusterChecks(config, { cwd: context.io.cwd, env: context.io.env, sandboxId })));
  } finally {
    await Promise.resolve(env?.close?.()).catch(() => undefined);
  }
  const missing = plugins.filter((plugin) => !plugin.loaded);
  checks.push(
    missing.length
      ? {
          name: 'plugins',
          status: 'warn',
          detail: `${plugins.length - missing.length} loaded; not available: ${missing.map((plugin) => `${plugin.name} (${plugin.error})`).join(', ')}`,
          fix: 'install the ones this run needs in your project (npm install <package>); in a checkout, bash scripts/setup.sh',
        }
      : { name: 'plugins', status: 'ok', detail: `${plugins.length} loaded` },
  );
  return checks;
}

const MARK: Record<Check['status'], string> = { ok: '✓', fail: '✗', warn: '!', skip: '–' };

export async function doctorCommand(context: CommandContext): Promise<number> {
  const checks = await runChecks(context);
  if (context.flags.json === true) context.io.stdout(`${JSON.stringify(checks)}\n`);
  else {
    const width = Math.max(...checks.map((check) => check.name.length));
    for (const check of checks) {
      context.io.stdout(`${MARK[check.status]} ${check.name.padEnd(width)}  ${check.detail}\n`);
      if (check.fix && check.status !== 'ok')
        context.io.stdout(`  ${' '.repeat(width)}  fix: ${check.fix}\n`);
    }
  }
  return checks.some((check) => check.status === 'fail') ? 1 : 0;
}
