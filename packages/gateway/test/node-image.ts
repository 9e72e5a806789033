// Test helper: a container image with node and the light harness, built without a registry on
// top of the test run's busybox image: this machine's node binary and the glibc libraries it
// links, the light harness and the openai SDK (no dependencies of its own). With `qwenCode`, the
// pinned qwen-code CLI too (one bundled file and its assets, no dependencies), started as
// `/opt/harness/bin/qwen`. Tagged by a hash of what goes in, so a daemon builds it once.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
export const LIGHT_HARNESS_FILE = fileURLToPath(new URL('./light-harness.mjs', import.meta.url));

/** The shared libraries `ldd` lists for a binary (absolute paths). */
function sharedLibraries(binary: string): string[] {
  return execFileSync('ldd', [binary], { encoding: 'utf8' })
    .split('\n')
    .flatMap((line) => {
      const match = /(\/\S+) \(0x/.exec(line);
      return match?.[1] ? [match[1]] : [];
    });
}

/** Where the qwen-code CLI's start script is inside the image (with `qwenCode`). */
export const IMAGE_HARNESS_BIN = '/opt/harness/bin';

export async function ensureNodeHarnessImage(options: {
  host: string;
  base: string;
  qwenCode?: boolean;
}): Promise<string> {
  const node = realpathSync(process.execPath);
  const openaiDir = realpathSync(fileURLToPath(new URL('../node_modules/openai', import.meta.url)));
  const qwenDir = options.qwenCode
    ? realpathSync(fileURLToPath(new URL('../node_modules/@qwen-code/qwen-code', import.meta.url)))
    : undefined;
  const libraries = sharedLibraries(node);
  const hash = createHash('sha256')
    .update(options.base)
    .update(qwenDir ? readFileSync(join(qwenDir, 'package.json')) : '')
    .update(process.version)
    .update(readFileSync(LIGHT_HARNESS_FILE))
    .update(readFileSync(join(openaiDir, 'package.json')))
    .update(libraries.join(','))
    .digest('hex')
    .slice(0, 12);
  const tag = `shears-test-node-harness:${hash}`;
  try {
    await execFileAsync('docker', ['-H', options.host, 'image', 'inspect', tag]);
    return tag;
  } catch {
    // not built yet
  }
  const context = mkdtempSync(join(tmpdir(), 'shears-node-image-'));
  try {
    const root = join(context, 'rootfs');
    mkdirSync(join(root, 'opt/node/bin'), { recursive: true });
    cpSync(node, join(root, 'opt/node/bin/node'));
    for (const library of libraries) {
      const target = join(root, library);
      mkdirSync(dirname(target), { recursive: true });
      cpSync(realpathSync(library), target);
    }
    mkdirSync(join(root, 'opt/harness/node_modules'), { recursive: true });
    cpSync(LIGHT_HARNESS_FILE, join(root, 'opt/harness/light-harness.mjs'));
    cpSync(openaiDir, join(root, 'opt/harness/node_modules/openai'), { recursive: true, dereference: true });
    if (qwenDir) {
      cpSync(qwenDir, join(root, 'opt/qwen-code'), { recursive: true, dereference: true });
      mkdirSync(join(root, IMAGE_HARNESS_BIN.slice(1)), { recursive: true });
      writeFileSync(
        join(root, IMAGE_HARNESS_BIN.slice(1), 'qwen'),
        '#!/bin/sh\nexec node /opt/qwen-code/cli.js "$@"\n',
        { mode: 0o755 },
      );
    }
    writeFileSync(
      join(context, 'Dockerfile'),
      [
        `FROM ${options.base}`,
        'COPY rootfs/ /',
        'ENV PATH=/opt/node/bin:/bin LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/lib64',
        '',
      ].join('\n'),
    );
    await execFileAsync('docker', ['-H', options.host, 'build', '-q', '-t', tag, context], {
      env: { ...process.env, DOCKER_BUILDKIT: '0' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return tag;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
