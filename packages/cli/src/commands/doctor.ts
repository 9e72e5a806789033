// `shears doctor`: checks what the configured run will use — Node, the env, the sandbox backend
// it resolves to (a real sandbox is opened on local/ssh hosts), the Docker daemons the sandbox or
// the env needs and the sandbox image on them, the inference server, the tool-call parsers, the
// tokenizer folder serve/train need, the trainer command of `shears train` (or the reference
// trainer's Python environment: it runs, imports, has the pinned versions), and the plugins — and
// says what to fix.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { EnvV1, Registry } from '@shears/core';
import { createHfTokenizer } from '@shears/servers';
import {
  dockerSandboxSettingsSchema,
  resolveDockerConnection,
  sshSandboxSettingsSchema,
} from '@shears/tools-terminal';
import {
  composeRegistry,
  createEnv,
  createSandboxProvider,
  createServer,
  MANAGED_SERVERS,
} from '../compose.js';
import { type CommandContext, resolveParsers } from '../runtime.js';
import { dockerSandboxImage, inspectImage, openDocker, SANDBOX_BASE_IMAGE } from '../sandbox-image.js';
import { recordsLogprobs } from '../serve/serve-loop.js';
import { referencePython, trainerSource } from '../train/reference-trainer.js';
import { probeTrainerPython, trainerPins, versionMismatches } from '../train/trainer-env.js';

export interface Check {
  name: string;
  status: 'ok' | 'fail' | 'skip' | 'warn';
  detail: string;
  fix?: string;
}

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

const DEFAULT_DOCKER_SOCKET = 'unix:///var/run/docker.sock';

function firstLine(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0] ?? String(error);
}

/** Reads the first line a TCP server sends (an sshd greets with `SSH-2.0-...`). */
function readBanner(host: string, port: number): Promise<{ banner: string } | { error: string }> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (result: { banner: string } | { error: string }) => {
      socket.destroy();
      done(result);
    };
    socket.setTimeout(3000, () => finish({ error: 'no banner within 3 s' }));
    socket.once('data', (data) => finish({ banner: data.toString('utf8').split('\n')[0]!.trim() }));
    socket.once('error', (error) => finish({ error: error.message }));
  });
}

async function sshBannerCheck(name: string, host: string, port: number, fields: string): Promise<Check> {
  const result = await readBanner(host, port);
  if ('error' in result)
    return {
      name,
      status: 'fail',
      detail: result.error,
      fix: `start sshd on ${host}:${port} or fix ${fields}`,
    };
  return result.banner.startsWith('SSH-')
    ? { name, status: 'ok', detail: result.banner }
    : {
        name,
        status: 'fail',
        detail: `not an ssh server (${result.banner.slice(0, 40)})`,
        fix: `${host}:${port} answers but is not sshd; fix ${fields}`,
      };
}

/** Opens one real sandbox with the configured provider and settings and runs a command in it. */
async function openSandboxCheck(
  context: CommandContext,
  registry: Registry,
  env: EnvV1 | undefined,
  id: string,
  fix: string,
): Promise<Check> {
  let provider: Awaited<ReturnType<typeof createSandboxProvider>> | undefined;
  try {
    provider = await createSandboxProvider(registry, context.config, env);
    const sandbox = await provider.acquire({}, { signal: context.signal });
    try {
      const result = await sandbox.exec('echo shears-doctor', { timeoutMs: 15_000, signal: context.signal });
      if (result.exitCode !== 0 || !result.output.includes('shears-doctor'))
        return {
          name: 'sandbox',
          status: 'fail',
          detail: `${id}: a test command exited ${result.exitCode}: ${result.output.trim().slice(0, 120)}`,
          fix,
        };
      return {
        name: 'sandbox',
        status: 'ok',
        detail: `${id}: opened a sandbox (${sandbox.isolated ? 'isolated' : 'NOT isolated'}) and ran a command in ${sandbox.workdir}`,
      };
    } finally {
      await sandbox.dispose();
    }
  } catch (error) {
    return { name: 'sandbox', status: 'fail', detail: context.redact(`${id}: ${firstLine(error)}`), fix };
  } finally {
    await provider?.close().catch(() => undefined);
  }
}

async function sandboxChecks(
  context: CommandContext,
  registry: Registry,
  env: EnvV1 | undefined,
  id: string,
): Promise<Check[]> {
  if (id === 'docker') return []; // the Docker hosts are checked below
  if (id !== 'ssh')
    return [
      await openSandboxCheck(
        context,
        registry,
        env,
        id,
        id === 'local'
          ? 'the local sandbox needs a writable temp directory and bash'
          : 'check sandbox.settings',
      ),
    ];
  const parsed = sshSandboxSettingsSchema.safeParse(context.config.sandbox.settings);
  if (!parsed.success)
    return [
      {
        name: 'sandbox',
        status: 'fail',
        detail: `ssh: ${parsed.error.issues.map((issue) => `sandbox.settings.${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
        fix: 'the ssh sandbox needs sandbox.settings.host and username, and a key (privateKeyPath, privateKey or agent)',
      },
    ];
  const { host, port = 22, username } = parsed.data;
  const banner = await sshBannerCheck(
    `ssh ${username}@${host}:${port}`,
    host,
    port,
    'sandbox.settings.host / port',
  );
  if (banner.status !== 'ok') return [banner];
  return [
    banner,
    await openSandboxCheck(
      context,
      registry,
      env,
      'ssh',
      'check sandbox.settings.username, the key (privateKeyPath / privateKey / agent) and the host key (knownHostsPath / hostKeyFingerprint)',
    ),
  ];
}

function pingDocker(
  settings: unknown,
): Promise<{ ok: true; detail: string } | { ok: false; detail: string }> {
  let options: ReturnType<typeof resolveDockerConnection>;
  try {
    options = resolveDockerConnection(settings as never);
  } catch (error) {
    return Promise.resolve({ ok: false, detail: firstLine(error) });
  }
  if (options.protocol === 'ssh') {
    return readBanner(options.host ?? '127.0.0.1', options.port ?? 22).then((result) =>
      'error' in result
        ? { ok: false, detail: `no ssh server: ${result.error}` }
        : { ok: true, detail: `ssh host answers (${result.banner}); the daemon is reached through it` },
    );
  }
  const request = options.protocol === 'https' ? httpsRequest : httpRequest;
  return new Promise((done) => {
    const call = request(
      {
        ...(options.socketPath
          ? { socketPath: options.socketPath }
          : { host: options.host, port: options.port }),
        ...(options.protocol === 'https' ? { ca: options.ca, cert: options.cert, key: options.key } : {}),
        path: '/_ping',
        method: 'GET',
        timeout: 3000,
      },
      (response) => {
        response.resume();
        done(
          response.statusCode === 200
            ? { ok: true, detail: 'daemon answers' }
            : { ok: false, detail: `daemon answered HTTP ${response.statusCode}` },
        );
      },
    );
    call.on('timeout', () => call.destroy(new Error('timed out')));
    call.on('error', (error) => done({ ok: false, detail: `no daemon: ${error.message}` }));
    call.end();
  });
}

interface DockerUse {
  url: string;
  settings: unknown;
  fields: string[];
  /** A host of the docker sandbox (rather than only the env's image builder). */
  sandboxHost: boolean;
}

/** The Docker daemons this run talks to: the docker sandbox's hosts and the env's image builder. */
function dockerUses(context: CommandContext, env: EnvV1 | undefined, sandboxId: string): DockerUse[] {
  const { config } = context;
  const vars = context.io.env;
  const uses = new Map<string, DockerUse>();
  const add = (url: string, settings: unknown, field: string, sandboxHost = false) => {
    const use = uses.get(url) ?? { url, settings, fields: [], sandboxHost };
    use.fields.push(field);
    use.sandboxHost ||= sandboxHost;
    uses.set(url, use);
  };
  if (sandboxId === 'docker') {
    const hosts = dockerSandboxSettingsSchema.safeParse(config.sandbox.settings).data?.hosts;
    if (hosts && hosts.length > 0) {
      hosts.forEach((host, index) => {
        const url =
          typeof host === 'string' ? host : String((host as { url?: unknown } | null)?.url ?? '(no url)');
        add(url, host, `sandbox.settings.hosts[${index}]`, true);
      });
    } else if (vars.DOCKER_HOST)
      add(vars.DOCKER_HOST, vars.DOCKER_HOST, 'the docker sandbox (DOCKER_HOST)', true);
    else add(DEFAULT_DOCKER_SOCKET, DEFAULT_DOCKER_SOCKET, 'the docker sandbox (default socket)', true);
  }
  // An env whose items are container images builds them with Docker during setup (the SWE env),
  // at env.settings.docker, else DOCKER_HOST, else the local socket (as createDockerClient does).
  const envDocker = config.env.settings.docker;
  const preferred = (env as { preferredSandbox?: unknown } | undefined)?.preferredSandbox;
  if (typeof envDocker === 'string') add(envDocker, envDocker, 'env.settings.docker');
  else if (preferred === 'docker') {
    const url = vars.DOCKER_HOST ?? DEFAULT_DOCKER_SOCKET;
    add(url, url, `env ${config.env.name} (builds its images; set env.settings.docker or DOCKER_HOST)`);
  }
  return [...uses.values()];
}

async function dockerChecks(
  context: CommandContext,
  env: EnvV1 | undefined,
  sandboxId: string,
): Promise<Check[]> {
  if (sandboxId === 'docker') {
    const parsed = dockerSandboxSettingsSchema.safeParse(context.config.sandbox.settings);
    if (!parsed.success)
      return [
        {
          name: 'docker',
          status: 'fail',
          detail: parsed.error.issues
            .map((issue) => `sandbox.settings.${issue.path.join('.')}: ${issue.message}`)
            .join('; '),
          fix: 'fix the docker sandbox settings (hosts, image, limits, network, ...)',
        },
      ];
  }
  const uses = dockerUses(context, env, sandboxId);
  if (uses.length === 0)
    return [
      {
        name: 'docker',
        status: 'skip',
        detail: `not needed (sandbox ${sandboxId}, env ${context.config.env.name})`,
      },
    ];
  const image = dockerSandboxImage(context.config);
  const checks = await Promise.all(
    uses.map(async (use): Promise<Check[]> => {
      const result = await pingDocker(use.settings);
      const name = `docker ${use.url}`;
      const usedBy = `used by ${use.fields.join(', ')}`;
      if (!result.ok)
        return [
          {
            name,
            status: 'fail',
            detail: `${result.detail} (${usedBy})`,
            fix: `start the daemon (sudo systemctl start docker, or dockerd &) or point ${use.fields[0]} at a running one`,
          },
        ];
      const answered: Check = { name, status: 'ok', detail: `${result.detail} (${usedBy})` };
      // The image sandboxes start from, on every host of the docker sandbox (envs with images of
      // their own, like swe, build them in `shears prepare`).
      if (!use.sandboxHost || ownImages(env)) return [answered];
      return [answered, await imageCheck(use, image)];
    }),
  );
  return checks.flat();
}

function ownImages(env: EnvV1 | undefined): boolean {
  return (env as { preferredSandbox?: unknown } | undefined)?.preferredSandbox === 'docker';
}

/** Whether the docker sandbox's image is on this host (for the default image: built from this recipe). */
async function imageCheck(use: DockerUse, image: string): Promise<Check> {
  const name = `image ${use.url}`;
  let state: Awaited<ReturnType<typeof inspectImage>>;
  try {
    state = await inspectImage((await openDocker(use.settings as string | { url: string })).docker, image);
  } catch (error) {
    return { name, status: 'fail', detail: `${image}: ${firstLine(error)}`, fix: 'check the daemon' };
  }
  if (state === 'present')
    return { name, status: 'ok', detail: `${image} is there (sandboxes start from it)` };
  const fix =
    image === SANDBOX_BASE_IMAGE
      ? 'run `shears prepare --sandbox docker` (builds it with debootstrap once, then imports it; needs root)'
      : `build or load ${image} on that daemon (docker build, docker load), or remove sandbox.image to use ${SANDBOX_BASE_IMAGE}`;
  return state === 'missing'
    ? {
        name,
        status: 'fail',
        detail: `${image} is not on this daemon: every docker sandbox would fail to start`,
        fix,
      }
    : {
        name,
        status: 'warn',
        detail: `${image} was built from another recipe than this version of shears uses (python3, git, CA certificates on bookworm)`,
        fix,
      };
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

async function parserCheck(registry: Registry, context: CommandContext): Promise<Check> {
  const { tool_parser: parser, fallback_parser: fallback } = context.config.server;
  try {
    await resolveParsers(registry, context.config);
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

async function serverCheck(context: CommandContext, registry: Registry): Promise<Check> {
  const { config } = context;
  try {
    const server = await createServer(registry, config, context.apiKey, context.io.cwd);
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

export async function runChecks(context: CommandContext): Promise<Check[]> {
  const { config } = context;
  const checks: Check[] = [nodeCheck()];
  const { registry, plugins } = await composeRegistry(config, {
    cwd: context.io.cwd,
    logger: context.logger,
  });
  let env: EnvV1 | undefined;
  try {
    env = await createEnv(registry, config, context.io.cwd);
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
    // The same resolution as a run: sandbox.provider, else the env's preferred backend, else local.
    const preferred = (env as { preferredSandbox?: unknown } | undefined)?.preferredSandbox;
    const sandboxId = config.sandbox.provider ?? (typeof preferred === 'string' ? preferred : 'local');
    checks.push(...(await sandboxChecks(context, registry, env, sandboxId)));
    checks.push(...(await dockerChecks(context, env, sandboxId)));
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
  } finally {
    await Promise.resolve(env?.close?.()).catch(() => undefined);
  }
  const missing = plugins.filter((plugin) => !plugin.loaded);
  checks.push(
    missing.length
      ? {
          name: 'plugins',
          status: 'warn',
          detail: `${plugins.length - missing.length} loaded; not available: ${missing.map((plugin) => plugin.name).join(', ')}`,
          fix: 'run bash scripts/setup.sh (pnpm install && pnpm build)',
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
