// `shears prepare`: builds what a run needs ahead of it, with progress. With the docker sandbox it
// puts the default sandbox image (`shears-base:bookworm`) on every docker host that lacks it —
// unless the env brings its own images (the SWE env) — and checks that a custom `sandbox.image`
// is there. Then it runs the env's set-up: for the SWE env, the base image and one image per task
// repository (cached by content hash). A later `process`, `serve` or `evaluate` finds all ready.
import { ConfigError, SandboxError } from '@shears/core';
import { envEntry, missingEnvError } from '../plan/env-plan.js';
import { importBuiltins } from '../plugin-packages.js';
import { createEnv, sandboxProviderId } from '../runtime/compose.js';
import { composeRegistry } from '../runtime/registry.js';
import {
  dockerSandboxHosts,
  dockerSandboxImage,
  ensureSandboxBaseImage,
  inspectImage,
  openDocker,
  SANDBOX_BASE_IMAGE,
} from '../sandbox-image.js';
import type { CommandContext } from '../session.js';
import { trainerSource } from '../train/reference-trainer.js';
import { installClusterEngine, prepareTrainerEnv } from '../train/trainer-env.js';

interface PreparedEntries {
  prepared?: ReadonlyMap<string, { image?: string }>;
}

async function prepareDockerSandbox(context: CommandContext): Promise<void> {
  const { config, io } = context;
  const image = dockerSandboxImage(config);
  const daemons = await Promise.all(
    dockerSandboxHosts(config.sandbox.settings).map((host) => openDocker(host)),
  );
  const report = (message: string) => io.stderr(`${context.redact(message)}\n`);
  if (image === SANDBOX_BASE_IMAGE) {
    const results = await ensureSandboxBaseImage({ daemons, report, signal: context.signal });
    for (const result of results) io.stdout(`${SANDBOX_BASE_IMAGE}  ${result.action} on ${result.url}\n`);
    return;
  }
  for (const { url, docker } of daemons) {
    const state = await inspectImage(docker, image).catch((error: unknown) => {
      throw new SandboxError({ message: `docker host ${url}: ${(error as Error).message}`, cause: error });
    });
    if (state !== 'present')
      throw new ConfigError({
        message: `sandbox.image: "${image}" is not on the docker host ${url}; shears prepare builds only ${SANDBOX_BASE_IMAGE}: build or load "${image}" there (docker build, docker load), or remove sandbox.image to use ${SANDBOX_BASE_IMAGE}`,
        issues: [{ path: 'sandbox.image', message: 'image not found', value: image }],
      });
    io.stdout(`${image}  present on ${url}\n`);
  }
}

/**
 * `shears prepare --trainer`: the reference trainer's venv (train.reference.venv), and nothing else;
 * `--cluster ray`: Ray in it too, at the cluster's version (cluster.address) or the pinned one.
 */
async function prepareTrainer(context: CommandContext, cluster: boolean): Promise<number> {
  const { io } = context;
  const started = Date.now();
  const result = await prepareTrainerEnv({
    config: context.config,
    cwd: io.cwd,
    env: io.env,
    report: (line) => io.stderr(`${context.redact(line)}\n`),
    signal: context.signal,
  });
  const versions = Object.entries(result.probe.versions)
    .map(([name, version]) => `${name} ${version ?? '-'}`)
    .join(', ');
  io.stdout(
    `trainer environment ${result.venv} ${result.action} in ${((Date.now() - started) / 1000).toFixed(1)} s: Python ${result.probe.python}, ${versions}\n`,
  );
  if (cluster) {
    const engine = await installClusterEngine({
      python: result.python,
      // prepareTrainerEnv found it (or refused above).
      source: trainerSource(io.env)!,
      address: context.config.cluster?.address,
      env: io.env,
      report: (line) => io.stderr(`${context.redact(line)}\n`),
      signal: context.signal,
    });
    io.stdout(`ray ${engine.ray} in ${result.venv} (${engine.reason})\n`);
  }
  return 0;
}

export async function prepareCommand(context: CommandContext): Promise<number> {
  const cluster = context.flags.cluster;
  if (cluster !== undefined && cluster !== 'ray')
    throw new ConfigError({
      message: `--cluster ${cluster === true ? '' : cluster}: shears prepare installs a cluster engine into the trainer's environment, and the only one is ray: --cluster ray`,
      issues: [{ path: 'cluster', message: 'not ray', value: cluster }],
    });
  // --cluster ray installs Ray into the trainer's environment: that environment is prepared first.
  if (context.flags.trainer === true || cluster === 'ray') return prepareTrainer(context, cluster === 'ray');
  const { config, io } = context;
  const started = Date.now();
  const registry = await composeRegistry(config, {
    cwd: io.cwd,
    logger: context.logger,
    imported: await importBuiltins(io.cwd),
  });
  if (config.env.name === undefined) {
    // `shears prepare --sandbox docker` builds the sandbox image, which needs no env; anything else does.
    if (config.sandbox.provider !== 'docker') throw missingEnvError(registry.registry);
    await prepareDockerSandbox(context);
    io.stdout('no env chosen (env.name or --env): prepared the docker sandbox image only\n');
    return context.signal.aborted ? 130 : 0;
  }
  const env = await createEnv(registry, envEntry(config, io.cwd));
  try {
    const ownImages = (env as { preferredSandbox?: unknown }).preferredSandbox === 'docker';
    if (sandboxProviderId(config.sandbox, env) === 'docker' && !ownImages)
      await prepareDockerSandbox(context);
    if (context.signal.aborted) {
      io.stderr('preparation interrupted; what was built is kept and reused next time\n');
      return 130;
    }
    if (!env.setup) {
      io.stdout(`env ${config.env.name} needs no preparation\n`);
      return 0;
    }
    await env.setup({ signal: context.signal, logger: context.logger });
    if (context.signal.aborted) {
      io.stderr('preparation interrupted; what was built is kept and reused next time\n');
      return 130;
    }
    const prepared = (env as PreparedEntries).prepared;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (prepared && prepared.size > 0) {
      const width = Math.max(...[...prepared.keys()].map((id) => id.length));
      for (const [id, entry] of prepared) io.stdout(`${id.padEnd(width)}  ${entry.image ?? '-'}\n`);
      io.stdout(`prepared ${prepared.size} task(s) of env ${config.env.name} in ${seconds} s\n`);
    } else io.stdout(`prepared env ${config.env.name} in ${seconds} s\n`);
    return 0;
  } finally {
    await env.close?.();
  }
}
