// The docker sandbox's default image, `shears-base:bookworm`, built without a registry: a
// `debootstrap --variant=minbase` root filesystem of Debian bookworm with python3, git and CA
// certificates, cached as a tarball and `docker import`ed with a recipe-hash label (the recipe,
// tag and label are @shears/tools-terminal's).
// debootstrap prints ~1,000 lines; the user sees its phases and package counts instead, and the
// full log is kept beside the cache for when it fails. `shears prepare --sandbox docker` runs it;
// `shears doctor` checks that the image is there.
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '@shears/core';
import { importOptionalPackage } from '@shears/core/internal';
import {
  IMAGE_HASH_LABEL,
  SANDBOX_BASE_IMAGE,
  SANDBOX_BASE_RECIPE,
  sandboxBaseHash,
} from '@shears/tools-terminal';
import type Dockerode from 'dockerode';

// The image's tag, recipe, label and hash live with the docker sandbox that uses them.
export { SANDBOX_BASE_IMAGE, sandboxBaseHash };

type ImageState = 'present' | 'missing' | 'outdated';

/** Whether `tag` is on the daemon; for the default image also whether it was built from this recipe. */
export async function inspectImage(docker: Dockerode, tag: string): Promise<ImageState> {
  try {
    const info = await docker.getImage(tag).inspect();
    if (tag !== SANDBOX_BASE_IMAGE) return 'present';
    return info.Config?.Labels?.[IMAGE_HASH_LABEL] === sandboxBaseHash() ? 'present' : 'outdated';
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return 'missing';
    throw error;
  }
}

/** debootstrap's per-package verbs: the phase each belongs to, and whether the line counts a package. */
const PHASES: Record<string, { phase: string; counts: boolean }> = {
  Retrieving: { phase: 'downloading packages', counts: true },
  Validating: { phase: 'downloading packages', counts: false },
  Extracting: { phase: 'extracting packages', counts: true },
  Unpacking: { phase: 'installing packages', counts: false },
  Configuring: { phase: 'installing packages', counts: true },
};

/**
 * Turns debootstrap's lines (one or two per package and phase, ~600 for this recipe) into a few
 * progress lines: one when a phase starts, one with its package count when it ends, warnings and
 * errors as they come, and a heartbeat every `heartbeatMs` while a phase runs long.
 */
export function createDebootstrapProgress(
  report: (message: string) => void,
  options: { heartbeatMs?: number; now?: () => number } = {},
) {
  const now = options.now ?? Date.now;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  let phase: string | undefined;
  let count = 0;
  let lastReport = now();
  const say = (message: string) => {
    lastReport = now();
    report(message);
  };
  const closePhase = () => {
    if (phase && count > 0) say(`debootstrap: ${phase}: ${count} done`);
    phase = undefined;
  };
  return {
    line(raw: string) {
      const line = raw.trim();
      if (line === '') return;
      if (/^[WE]: /.test(line)) return say(`debootstrap ${line}`);
      if (/^I: Base system installed successfully/.test(line)) return closePhase();
      const match = /^I: (\w+) (\S+)/.exec(line);
      const entry = match ? PHASES[match[1]!] : undefined;
      // Index files ("Retrieving Packages") and round headers ("Unpacking required packages...") are not packages.
      if (!entry || /^(Packages|Release|InRelease|required|the)$/.test(match![2]!)) return;
      if (entry.phase !== phase) {
        closePhase();
        phase = entry.phase;
        count = 0;
        say(`debootstrap: ${phase}…`);
      }
      if (!entry.counts) return;
      count++;
      if (now() - lastReport >= heartbeatMs) say(`debootstrap: ${phase}: ${count} so far`);
    },
    end() {
      closePhase();
    },
  };
}

/** Runs debootstrap into `dir`, its output to `logPath` and through the progress summariser. */
async function runDebootstrap(
  dir: string,
  logPath: string,
  report: (message: string) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  const log = createWriteStream(logPath);
  const progress = createDebootstrapProgress(report);
  const tail: string[] = [];
  const { suite, variant, include, mirror } = SANDBOX_BASE_RECIPE;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      'debootstrap',
      [`--variant=${variant}`, `--include=${include.join(',')}`, suite, dir, mirror],
      { stdio: ['ignore', 'pipe', 'pipe'], signal },
    );
    let pending = '';
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        progress.line(line);
        tail.push(line);
        if (tail.length > 15) tail.shift();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new SandboxError({
              message:
                'debootstrap is not installed: install it (apt-get install debootstrap) to build shears-base:bookworm, or set sandbox.image to an image you have',
            })
          : error,
      ),
    );
    child.on('close', (code) => {
      log.end();
      progress.end();
      if (code === 0) resolve();
      else
        reject(
          new SandboxError({
            message: `debootstrap failed (exit ${code}); full log: ${logPath}\n${tail.join('\n')}`,
          }),
        );
    });
  });
  // What a sandbox never needs: downloaded .debs and apt lists.
  for (const junk of ['var/cache/apt/archives', 'var/lib/apt/lists']) {
    const path = join(dir, junk);
    if (existsSync(path))
      for (const entry of readdirSync(path))
        if (entry.endsWith('.deb') || entry.includes('_dists_'))
          rmSync(join(path, entry), { force: true, recursive: true });
  }
  mkdirSync(join(dir, 'workspace'), { recursive: true });
}

function runTar(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('tar', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(new SandboxError({ message: `tar ${args.join(' ')} failed: ${stderr.trim()}` })),
    );
  });
}

interface EnsureSandboxImageOptions {
  /** Daemons to put the image on (each docker sandbox host). */
  daemons: ReadonlyArray<{ url: string; docker: Dockerode }>;
  /** Where the root filesystem tarball is cached; default $SHEARS_IMAGE_CACHE or <tmp>/shears-image-cache. */
  cacheDir?: string;
  report: (message: string) => void;
  signal?: AbortSignal;
}

/**
 * Puts `shears-base:bookworm` on every daemon that lacks it (or has one from another recipe):
 * debootstrap once per cache directory, then an import per daemon. Returns what it did per daemon.
 */
export async function ensureSandboxBaseImage(
  options: EnsureSandboxImageOptions,
): Promise<Array<{ url: string; action: 'up to date' | 'imported' }>> {
  const hash = sandboxBaseHash();
  const results: Array<{ url: string; action: 'up to date' | 'imported' }> = [];
  const needed: Array<{ url: string; docker: Dockerode }> = [];
  for (const daemon of options.daemons) {
    const state = await inspectImage(daemon.docker, SANDBOX_BASE_IMAGE);
    if (state === 'present') results.push({ url: daemon.url, action: 'up to date' });
    else needed.push(daemon);
  }
  if (needed.length === 0) return results;
  const cacheDir = options.cacheDir ?? process.env.SHEARS_IMAGE_CACHE ?? join(tmpdir(), 'shears-image-cache');
  mkdirSync(cacheDir, { recursive: true });
  const tarball = join(cacheDir, `base-${hash}.tar`);
  if (existsSync(tarball)) options.report(`using the cached root filesystem ${tarball}`);
  else {
    if (process.getuid?.() !== 0)
      throw new SandboxError({
        message: `building ${SANDBOX_BASE_IMAGE} runs debootstrap, which needs root: run \`sudo shears prepare --sandbox docker\` once (the result is cached in ${cacheDir}), or set sandbox.image to an image you have`,
      });
    const scratch = join(tmpdir(), `shears-rootfs-base-${process.pid}-${Date.now()}`);
    const started = Date.now();
    try {
      options.report(
        `building ${SANDBOX_BASE_IMAGE}: debootstrap ${SANDBOX_BASE_RECIPE.suite} with ${SANDBOX_BASE_RECIPE.include.join(', ')} (1–5 minutes, once; cached in ${cacheDir})`,
      );
      await runDebootstrap(scratch, `${tarball}.debootstrap.log`, options.report, options.signal);
      const partial = `${tarball}.partial-${process.pid}`;
      await runTar(['-C', scratch, '--numeric-owner', '-cf', partial, '.']);
      renameSync(partial, tarball);
      options.report(`root filesystem ready in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const [repo, tag] = SANDBOX_BASE_IMAGE.split(':') as [string, string];
  for (const daemon of needed) {
    options.report(`importing ${SANDBOX_BASE_IMAGE} into ${daemon.url}`);
    // dockerode's types give importImage no promise form; it returns the progress stream.
    const stream = (await daemon.docker.importImage(
      createReadStream(tarball) as never,
      {
        repo,
        tag,
        changes: [`LABEL ${IMAGE_HASH_LABEL}=${hash}`, 'CMD ["/bin/sh"]'],
      } as never,
    )) as unknown as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      daemon.docker.modem.followProgress(stream, (error: Error | null, events: Array<{ error?: string }>) => {
        const failed = events?.find((event) => event.error);
        if (error || failed)
          reject(
            new SandboxError({
              message: `docker import of ${SANDBOX_BASE_IMAGE} into ${daemon.url} failed: ${error?.message ?? failed?.error}`,
            }),
          );
        else resolve();
      }),
    );
    results.push({ url: daemon.url, action: 'imported' });
  }
  return results;
}

/** The daemons of the docker sandbox, as it resolves them: sandbox.settings.hosts, else $DOCKER_HOST, else the local socket. */
export function dockerSandboxHosts(settings: Record<string, unknown>): Array<string | { url: string }> {
  const hosts = settings.hosts;
  if (Array.isArray(hosts) && hosts.length > 0) return hosts as Array<string | { url: string }>;
  return [process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'];
}

/** The image docker sandboxes start from when the env names none. */
export function dockerSandboxImage(config: {
  sandbox: { image?: string; settings: Record<string, unknown> };
}): string {
  const fromSettings = config.sandbox.settings.image;
  return typeof fromSettings === 'string' ? fromSettings : (config.sandbox.image ?? SANDBOX_BASE_IMAGE);
}

/** A dockerode client for one docker sandbox host (dockerode is loaded only here). */
export async function openDocker(
  host: string | { url: string },
): Promise<{ url: string; docker: Dockerode }> {
  const [{ default: Docker }, { resolveDockerConnection }] = await Promise.all([
    importOptionalPackage('dockerode', () => import('dockerode'), {
      usedBy: 'the docker sandbox',
      field: 'sandbox.provider',
    }),
    import('@shears/tools-terminal'),
  ]);
  const url = typeof host === 'string' ? host : host.url;
  return { url, docker: new Docker(resolveDockerConnection(host as never) as Dockerode.DockerOptions) };
}
