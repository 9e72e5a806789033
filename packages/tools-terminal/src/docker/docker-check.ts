// `check()` of the docker sandbox (and of env packs that build images on a Docker host): does
// each configured daemon answer, and does it hold the image sandboxes start from. Used by
// `shears doctor`; every failure is a result naming the config field, never a throw.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PluginCheckContext, PluginCheckResult } from '@shears/core';
import { importOptionalPackage, optionalPackageCheck } from '@shears/core/internal';
import type Dockerode from 'dockerode';
import { readBanner } from '../ssh/ssh-check.js';
import { type DockerHostSettings, resolveDockerConnection } from './docker-hosts.js';
import { DOCKERODE_USE, type dockerSandboxSettingsSchema } from './docker-sandbox-provider.js';

const DEFAULT_DOCKER_SOCKET = 'unix:///var/run/docker.sock';

function firstLine(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0] ?? String(error);
}

type Ping = { ok: true; detail: string } | { ok: false; detail: string };

/** GET /_ping on the daemon (for ssh:// hosts: whether the ssh server answers). */
function pingDocker(host: DockerHostSettings | string): Promise<Ping> {
  let options: ReturnType<typeof resolveDockerConnection>;
  try {
    options = resolveDockerConnection(host);
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

export interface DockerHostCheckOptions {
  /** What uses this daemon, in config terms (`sandbox.settings.hosts[0]`, `env.settings.docker`). */
  usedBy: string;
  /** The field to point elsewhere when it does not answer. */
  field: string;
  /** An image that must be on the daemon (sandboxes start from it). */
  image?: string;
}

/** One daemon: `docker <url>` (answers or not) and, when asked, `image <url>` (present or not). */
export async function checkDockerHost(
  host: DockerHostSettings | string,
  options: DockerHostCheckOptions,
): Promise<PluginCheckResult[]> {
  const url = typeof host === 'string' ? host : host.url;
  const name = `docker ${url}`;
  const ping = await pingDocker(host);
  if (!ping.ok)
    return [
      {
        name,
        status: 'fail',
        detail: `${ping.detail} (used by ${options.usedBy})`,
        fix: `start the daemon (sudo systemctl start docker, or dockerd &) or point ${options.field} at a running one`,
      },
    ];
  const answered: PluginCheckResult = {
    name,
    status: 'ok',
    detail: `${ping.detail} (used by ${options.usedBy})`,
  };
  if (!options.image) return [answered];
  return [answered, await imageCheck(host, url, options.image)];
}

async function imageCheck(
  host: DockerHostSettings | string,
  url: string,
  image: string,
): Promise<PluginCheckResult> {
  const name = `image ${url}`;
  try {
    const { default: Docker } = await importOptionalPackage(
      'dockerode',
      () => import('dockerode'),
      DOCKERODE_USE,
    );
    const docker = new Docker(resolveDockerConnection(host) as Dockerode.DockerOptions);
    await docker.getImage(image).inspect();
    return { name, status: 'ok', detail: `${image} is there (sandboxes start from it)`, host: url };
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404)
      return { name, status: 'fail', detail: `${image}: ${firstLine(error)}`, fix: 'check the daemon' };
    return {
      name,
      status: 'fail',
      detail: `${image} is not on this daemon: every docker sandbox would fail to start`,
      fix: `build or load ${image} on that daemon (docker build, docker load)`,
      host: url,
    };
  }
}

/** The docker sandbox's check: every host it would place sandboxes on, and its image there. */
export async function checkDockerSandbox(
  settings: ReturnType<typeof dockerSandboxSettingsSchema.parse>,
  context: PluginCheckContext,
): Promise<PluginCheckResult[]> {
  const field = `${context.settingsField}.hosts`;
  const targets: { host: DockerHostSettings | string; usedBy: string; field: string }[] = settings.hosts
    ?.length
    ? settings.hosts.map((host, index) => ({
        host,
        usedBy: `${field}[${index}]`,
        field: `${field}[${index}]`,
      }))
    : context.env.DOCKER_HOST
      ? [{ host: context.env.DOCKER_HOST, usedBy: 'the docker sandbox (DOCKER_HOST)', field }]
      : [{ host: DEFAULT_DOCKER_SOCKET, usedBy: 'the docker sandbox (default socket)', field }];
  // Without dockerode no sandbox can start: say so first; the daemons are still pinged (over
  // HTTP, without dockerode), the image check that needs it is left out.
  const missing = optionalPackageCheck('dockerode', import.meta.url, DOCKERODE_USE);
  const image = missing ? undefined : settings.image;
  const results = await Promise.all(
    targets.map((target) => checkDockerHost(target.host, { ...target, image })),
  );
  return [...(missing ? [missing] : []), ...results.flat()];
}
