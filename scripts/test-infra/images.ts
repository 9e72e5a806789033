// Locally built Docker images for tests and the SWE env. There is no registry here, so images are
// made from a root filesystem and `docker import`ed: a ~2 MB busybox-static image for sandbox tests
// and a Debian bookworm base (python3, git) for SWE tasks. Each image carries a content-hash
// label; an image whose label matches is reused, and the debootstrap rootfs is cached as a tarball
// on disk so a fresh daemon imports it in seconds instead of re-running debootstrap.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export type ImageName = 'busybox' | 'base';

export const IMAGE_TAGS: Record<ImageName, string> = {
  busybox: 'shears-test-busybox:latest',
  base: 'shears-base:bookworm',
};

const HASH_LABEL = 'shears.image.hash';
const BUSYBOX_BINARY = '/bin/busybox';
const BASE_RECIPE = {
  suite: 'bookworm',
  variant: 'minbase',
  include: ['python3', 'git', 'ca-certificates'],
  mirror: 'http://deb.debian.org/debian',
};

export interface EnsureImageOptions {
  /** Docker host URL (`unix:///…/docker.sock`); defaults to SHEARS_TEST_DOCKER_HOST, then DOCKER_HOST. */
  host?: string;
  /** Where rootfs tarballs are cached between daemons; default $SHEARS_IMAGE_CACHE or <tmp>/shears-image-cache. */
  cacheDir?: string;
  log?: (message: string) => void;
}

function dockerArgs(host: string | undefined, args: string[]): string[] {
  return host ? ['-H', host, ...args] : args;
}

async function docker(host: string | undefined, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('docker', dockerArgs(host, args), { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** Pipe a tar stream made by `tar -C dir -c .` (or an existing tarball) into `docker import`. */
async function importRootfs(
  host: string | undefined,
  source: { dir: string } | { tarball: string },
  tag: string,
  hash: string,
): Promise<void> {
  const importArgs = dockerArgs(host, [
    'import',
    '--change',
    `LABEL ${HASH_LABEL}=${hash}`,
    '--change',
    'CMD ["/bin/sh"]',
    '-',
    tag,
  ]);
  await new Promise<void>((resolve, reject) => {
    const importer = spawn('docker', importArgs, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    importer.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const tarArgs =
      'dir' in source
        ? ['-C', source.dir, '--numeric-owner', '-c', '.']
        : ['-c', `cat ${JSON.stringify(source.tarball)}`];
    const producer =
      'dir' in source
        ? spawn('tar', tarArgs, { stdio: ['ignore', 'pipe', 'inherit'] })
        : spawn('sh', tarArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    producer.stdout?.pipe(importer.stdin);
    producer.on('error', reject);
    importer.on('error', reject);
    importer.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`docker import ${tag} failed (exit ${code}): ${stderr.trim()}`));
    });
  });
}

async function findImage(host: string | undefined, tag: string, hash: string): Promise<boolean> {
  try {
    const label = await docker(host, [
      'image',
      'inspect',
      '--format',
      `{{ index .Config.Labels "${HASH_LABEL}" }}`,
      tag,
    ]);
    return label === hash;
  } catch {
    return false; // not present
  }
}

function busyboxHash(): string {
  return createHash('sha256')
    .update('busybox-v1')
    .update(readFileSync(BUSYBOX_BINARY))
    .digest('hex')
    .slice(0, 16);
}

function baseHash(): string {
  return createHash('sha256').update(JSON.stringify(BASE_RECIPE)).digest('hex').slice(0, 16);
}

/** Lay out a busybox-static root filesystem: /bin with every applet, /tmp, /etc/passwd, /root. */
function writeBusyboxRootfs(dir: string): void {
  for (const sub of ['bin', 'tmp', 'etc', 'root', 'workspace', 'proc', 'sys', 'dev'])
    mkdirSync(join(dir, sub), { recursive: true });
  chmodSync(join(dir, 'tmp'), 0o1777);
  copyFileSync(BUSYBOX_BINARY, join(dir, 'bin', 'busybox'));
  chmodSync(join(dir, 'bin', 'busybox'), 0o755);
  // `busybox --list` names every applet compiled in; each becomes a symlink like a real install.
  for (const applet of readApplets())
    if (applet !== 'busybox') symlinkSync('busybox', join(dir, 'bin', applet));
  mkdirSync(join(dir, 'usr'), { recursive: true });
  symlinkSync('../bin', join(dir, 'usr', 'bin'));
  symlinkSync('bin', join(dir, 'sbin'));
  writeFileSync(
    join(dir, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
  );
  writeFileSync(join(dir, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
}

function readApplets(): string[] {
  return execFileSync(BUSYBOX_BINARY, ['--list'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim() !== '');
}

async function runDebootstrap(dir: string, log: (message: string) => void): Promise<void> {
  log(`images: debootstrap ${BASE_RECIPE.suite} into ${dir} (about a minute)`);
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      'debootstrap',
      [
        `--variant=${BASE_RECIPE.variant}`,
        `--include=${BASE_RECIPE.include.join(',')}`,
        BASE_RECIPE.suite,
        dir,
        BASE_RECIPE.mirror,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`debootstrap failed (exit ${code}): ${stderr.trim()}`)),
    );
  });
  // Trim what a sandbox never needs: apt lists and caches.
  for (const junk of ['var/cache/apt/archives', 'var/lib/apt/lists']) {
    const path = join(dir, junk);
    if (existsSync(path))
      for (const entry of readdirSync(path))
        if (entry.endsWith('.deb') || entry.includes('_dists_'))
          rmSync(join(path, entry), { force: true, recursive: true });
  }
  mkdirSync(join(dir, 'workspace'), { recursive: true });
}

async function tarDirectory(dir: string, tarball: string): Promise<void> {
  const partial = `${tarball}.partial-${process.pid}`;
  await execFileAsync('tar', ['-C', dir, '--numeric-owner', '-cf', partial, '.']);
  renameSync(partial, tarball);
}

/**
 * Make sure the named image exists on the daemon (building it if needed) and return its tag.
 * `busybox` takes ~0.2 s; `base` runs debootstrap once per cache dir (~45 s, 380 MB) and is then
 * imported from the cached tarball.
 */
export async function ensureImage(name: ImageName, options: EnsureImageOptions = {}): Promise<string> {
  const host = options.host ?? process.env.SHEARS_TEST_DOCKER_HOST ?? process.env.DOCKER_HOST;
  const log = options.log ?? ((message: string) => console.log(message));
  if (!(name in IMAGE_TAGS))
    throw new Error(`Unknown image "${String(name)}" (available: ${Object.keys(IMAGE_TAGS).join(', ')})`);
  const tag = IMAGE_TAGS[name];
  const hash = name === 'busybox' ? busyboxHash() : baseHash();
  if (await findImage(host, tag, hash)) return tag;
  const scratch = join(tmpdir(), `shears-rootfs-${name}-${process.pid}-${Date.now()}`);
  try {
    if (name === 'busybox') {
      writeBusyboxRootfs(scratch);
      await importRootfs(host, { dir: scratch }, tag, hash);
      return tag;
    }
    const cacheDir =
      options.cacheDir ?? process.env.SHEARS_IMAGE_CACHE ?? join(tmpdir(), 'shears-image-cache');
    mkdirSync(cacheDir, { recursive: true });
    const tarball = join(cacheDir, `${name}-${hash}.tar`);
    if (!existsSync(tarball)) {
      await runDebootstrap(scratch, log);
      await tarDirectory(scratch, tarball);
    }
    log(`images: importing ${tag} from ${tarball}`);
    await importRootfs(host, { tarball }, tag, hash);
    return tag;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
