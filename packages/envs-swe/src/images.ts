// SWE images, built locally (there is no registry): a base image made with debootstrap and
// `docker import` (python3 + pytest, git, node), and a per-repository layer holding the prepared
// repository at /testbed and its set-up, tagged by a content hash so an unchanged repository is
// never rebuilt. Building reports progress through a callback (the CLI shows it).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { SandboxError } from '@shears/core';
import { type DockerHostSettings, resolveDockerConnection } from '@shears/tools-terminal';
import type Dockerode from 'dockerode';
import type { PreparedRepository } from './repo.js';
import type { SweTask } from './task-schema.js';

export type ProgressCallback = (message: string) => void;

export const SWE_BASE_RECIPE = {
  suite: 'bookworm',
  variant: 'minbase',
  include: ['python3', 'python3-pytest', 'git', 'nodejs', 'ca-certificates'],
  mirror: 'http://deb.debian.org/debian',
} as const;

export const SWE_WORKDIR = '/testbed';

function shortHash(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex').slice(0, 16);
}

export function sweBaseImageTag(recipe: typeof SWE_BASE_RECIPE = SWE_BASE_RECIPE): string {
  return `shears-swe-base:${shortHash(JSON.stringify(recipe))}`;
}

/**
 * A dockerode client for a Docker host as the docker sandbox takes it (`unix:///path`,
 * `tcp://host:port`, `https://host[:2376]`, `ssh://user@host[:22]`, or `{ url, tls, ssh }`;
 * parsed by @shears/tools-terminal's resolveDockerConnection), else $DOCKER_HOST, else the
 * local socket.
 */
export async function createDockerClient(host?: string | DockerHostSettings): Promise<Dockerode> {
  const { default: Docker } = await import('dockerode');
  const target = host ?? process.env.DOCKER_HOST;
  return target ? new Docker(resolveDockerConnection(target) as Dockerode.DockerOptions) : new Docker();
}

async function imageExists(docker: Dockerode, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

function run(command: string, args: string[], onProgress?: ProgressCallback): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const collect = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) onProgress?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (error) =>
      reject(new SandboxError({ message: `${command} could not start: ${error.message}`, cause: error })),
    );
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new SandboxError({ message: `${command} ${args.join(' ')} failed (exit ${code}):\n${tail}` }),
          ),
    );
  });
}

function tarStream(directory: string): Readable {
  const child = spawn('tar', ['-C', directory, '--numeric-owner', '-c', '.'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return child.stdout;
}

async function followBuild(
  docker: Dockerode,
  stream: NodeJS.ReadableStream,
  onProgress?: ProgressCallback,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
        const failed = events?.find((event) => event.error);
        if (error) reject(error);
        else if (failed)
          reject(
            new SandboxError({
              message: `docker build failed: ${failed.errorDetail?.message ?? failed.error}`,
            }),
          );
        else resolve();
      },
      (event: { stream?: string; status?: string }) => {
        const text = (event.stream ?? event.status ?? '').trim();
        if (text) onProgress?.(text);
      },
    );
  });
}

/**
 * Ensures the SWE base image exists: debootstrap (root and the `debootstrap` package are
 * needed the first time; the root filesystem is cached as a tarball in `cacheDir`) and import.
 */
export async function ensureSweBaseImage(options: {
  docker: Dockerode;
  cacheDir?: string;
  onProgress?: ProgressCallback;
}): Promise<string> {
  const tag = sweBaseImageTag();
  if (await imageExists(options.docker, tag)) {
    options.onProgress?.(`base image ${tag} is up to date`);
    return tag;
  }
  const cacheDir = options.cacheDir ?? process.env.SHEARS_IMAGE_CACHE ?? join(tmpdir(), 'shears-image-cache');
  mkdirSync(cacheDir, { recursive: true });
  const tarball = join(cacheDir, `swe-base-${tag.split(':')[1]}.tar`);
  if (!existsSync(tarball)) {
    const rootfs = mkdtempSync(join(tmpdir(), 'shears-swe-rootfs-'));
    try {
      options.onProgress?.(
        `debootstrap ${SWE_BASE_RECIPE.suite} (${SWE_BASE_RECIPE.include.join(', ')}) — about a minute`,
      );
      await run(
        'debootstrap',
        [
          `--variant=${SWE_BASE_RECIPE.variant}`,
          `--include=${SWE_BASE_RECIPE.include.join(',')}`,
          SWE_BASE_RECIPE.suite,
          rootfs,
          SWE_BASE_RECIPE.mirror,
        ],
        options.onProgress,
      );
      // Keep the image lean: package lists and caches are not needed at run time.
      rmSync(join(rootfs, 'var/cache/apt/archives'), { recursive: true, force: true });
      rmSync(join(rootfs, 'var/lib/apt/lists'), { recursive: true, force: true });
      await run('tar', ['-C', rootfs, '--numeric-owner', '-cf', `${tarball}.partial`, '.']);
      renameSync(`${tarball}.partial`, tarball);
    } finally {
      rmSync(rootfs, { recursive: true, force: true });
    }
  }
  options.onProgress?.(`importing ${tag}`);
  const { createReadStream } = await import('node:fs');
  const [repo, version] = tag.split(':') as [string, string];
  const importStream = await options.docker.importImage(createReadStream(tarball) as never, {
    repo,
    tag: version,
  });
  await followBuild(options.docker, importStream, options.onProgress);
  return tag;
}

/** The per-repository image tag: base image + repository content + set-up commands. */
export function taskImageTag(task: SweTask, prepared: PreparedRepository, baseTag: string): string {
  return `shears-swe-${task.id.toLowerCase().replace(/[^a-z0-9._-]/g, '-')}:${shortHash(baseTag, prepared.contentHash, JSON.stringify(task.setup))}`;
}

/** Ensures the per-repository image exists (repository at /testbed, set-up commands run). */
export async function ensureTaskImage(options: {
  docker: Dockerode;
  task: SweTask;
  prepared: PreparedRepository;
  baseTag: string;
  onProgress?: ProgressCallback;
}): Promise<string> {
  const tag = taskImageTag(options.task, options.prepared, options.baseTag);
  if (await imageExists(options.docker, tag)) {
    options.onProgress?.(`image ${tag} is up to date`);
    return tag;
  }
  const context = mkdtempSync(join(tmpdir(), 'shears-swe-context-'));
  try {
    cpSync(options.prepared.dir, join(context, 'repo'), { recursive: true });
    const setup = options.task.setup
      .map((command) => `RUN ${JSON.stringify(['/bin/sh', '-c', command])}`)
      .join('\n');
    writeFileSync(
      join(context, 'Dockerfile'),
      `FROM ${options.baseTag}\nCOPY repo ${SWE_WORKDIR}\nWORKDIR ${SWE_WORKDIR}\nRUN git config --system --add safe.directory '*'\n${setup}\nLABEL shears.swe.task=${JSON.stringify(options.task.id)}\n`,
    );
    options.onProgress?.(`building ${tag}`);
    const stream = await options.docker.buildImage(tarStream(context) as never, {
      t: tag,
      rm: true,
      forcerm: true,
      networkmode: 'none',
    });
    await followBuild(options.docker, stream, options.onProgress);
    return tag;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
