// The busybox test image, built without a registry: a ~2 MB busybox-static root filesystem
// `docker import`ed with a content-hash label, so an image whose label matches is reused. (The
// docker sandbox's default image, shears-base:bookworm, is built by `shears prepare`; its recipe
// is @shears/tools-terminal's.)
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** The tag of the test image. */
export const TEST_IMAGE = 'shears-test-busybox:latest';

const HASH_LABEL = 'shears.image.hash';
const BUSYBOX_BINARY = '/bin/busybox';

export interface EnsureTestImageOptions {
  /** Docker host URL (`unix:///…/docker.sock`); defaults to SHEARS_TEST_DOCKER_HOST, then DOCKER_HOST. */
  host?: string;
}

function dockerArgs(host: string | undefined, args: string[]): string[] {
  return host ? ['-H', host, ...args] : args;
}

async function docker(host: string | undefined, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('docker', dockerArgs(host, args), { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** Pipes `tar -C dir -c .` into `docker import`, labelled with the content hash. */
async function importRootfs(host: string | undefined, dir: string, tag: string, hash: string): Promise<void> {
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
    const producer = spawn('tar', ['-C', dir, '--numeric-owner', '-c', '.'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
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

/**
 * Makes sure the test image is on the daemon (building it in about 0.2 s when it is missing or
 * was built from another busybox) and returns its tag.
 */
export async function ensureTestImage(options: EnsureTestImageOptions = {}): Promise<string> {
  const host = options.host ?? process.env.SHEARS_TEST_DOCKER_HOST ?? process.env.DOCKER_HOST;
  const hash = busyboxHash();
  if (await findImage(host, TEST_IMAGE, hash)) return TEST_IMAGE;
  const scratch = join(tmpdir(), `shears-rootfs-busybox-${process.pid}-${Date.now()}`);
  try {
    writeBusyboxRootfs(scratch);
    await importRootfs(host, scratch, TEST_IMAGE, hash);
    return TEST_IMAGE;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
