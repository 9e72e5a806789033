// `shears prepare --sandbox docker` against the test run's real Docker daemon: it builds the
// default sandbox image (debootstrap once per machine, cached as a tarball; an import per daemon)
// with a few lines of progress, `shears doctor` sees the image before and after, and a
// `shears process` in docker sandboxes then runs. The debootstrap summariser is also fed the
// full log of the real build.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createDebootstrapProgress, SANDBOX_BASE_IMAGE, sandboxBaseHash } from '../sandbox-image.js';
import { runShears } from '../test-support/run-cli.js';

// A first build runs debootstrap (1–5 minutes on a shared machine); later runs import the cache.
vi.setConfig({ testTimeout: 900_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-prepare-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const dockerHost = process.env.SHEARS_TEST_DOCKER_HOST;
if (!dockerHost && (process.env.CI === 'true' || process.env.CI === '1'))
  throw new Error('CI=true but SHEARS_TEST_DOCKER_HOST is not set: the test Docker daemon did not start');
const cacheDir = process.env.SHEARS_IMAGE_CACHE ?? join(tmpdir(), 'shears-image-cache');

describe.skipIf(!dockerHost)('shears prepare --sandbox docker', () => {
  const hosts = ['--sandbox', 'docker', '--sandbox.settings.hosts', `["${dockerHost}"]`];

  it('builds the default sandbox image that doctor asked for, and a docker run then works', async () => {
    const before = await runShears(['doctor', '--env', 'demo', ...hosts], { cwd: dir });
    expect(before.stdout).toMatch(
      new RegExp(
        `✗ image \\S+\\s+${SANDBOX_BASE_IMAGE} is not on this daemon: every docker sandbox would fail to start\\n\\s+fix: run \`shears prepare --sandbox docker\``,
      ),
    );
    expect(before.code).toBe(1);

    const built = await runShears(['prepare', '--env', 'demo', ...hosts], { cwd: dir });
    expect(built.code, built.stderr).toBe(0);
    expect(built.stdout).toContain(`${SANDBOX_BASE_IMAGE}  imported on ${dockerHost}`);
    expect(built.stdout).toContain('env demo needs no preparation');
    // Progress, not debootstrap's thousand lines: phases with counts, or the cache it reused.
    const lines = built.stderr.trim().split('\n');
    expect(lines.length).toBeLessThan(25);
    expect(built.stderr).toMatch(
      /using the cached root filesystem|debootstrap: installing packages: \d+ done/,
    );
    expect(built.stderr).toContain(`importing ${SANDBOX_BASE_IMAGE} into ${dockerHost}`);

    const after = await runShears(['doctor', '--env', 'demo', ...hosts], { cwd: dir });
    expect(after.stdout).toMatch(new RegExp(`✓ image \\S+\\s+${SANDBOX_BASE_IMAGE} is there`));
    expect(after.code, after.stdout).toBe(0);

    const again = await runShears(['prepare', '--env', 'demo', ...hosts], { cwd: dir });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`${SANDBOX_BASE_IMAGE}  up to date on ${dockerHost}`);
    expect(again.stderr).toBe('');

    const run = await runShears(
      [
        'process',
        '--env',
        'demo',
        ...hosts,
        '--env.settings.only',
        '[hello-file]',
        '--groups',
        '1',
        '--out',
        'runs/docker.jsonl',
        '--no-report',
      ],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    const group = JSON.parse(readFileSync(join(dir, 'runs/docker.jsonl'), 'utf8'));
    expect(group.scores).toContain(1);
  });

  it('says which image is missing when sandbox.image is one prepare cannot build', async () => {
    const run = await runShears(
      ['prepare', '--env', 'demo', ...hosts, '--sandbox.image', 'shears-no-such-image:2'],
      {
        cwd: dir,
      },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `sandbox.image: "shears-no-such-image:2" is not on the docker host ${dockerHost}; shears prepare builds only ${SANDBOX_BASE_IMAGE}`,
    );
  });

  it("summarises the real build's debootstrap log in a few lines", () => {
    const log = join(cacheDir, `base-${sandboxBaseHash()}.tar.debootstrap.log`);
    // The log is kept by the build that made the cached tarball (the test above or an earlier run).
    if (!existsSync(log))
      return expect(existsSync(join(cacheDir, `base-${sandboxBaseHash()}.tar`))).toBe(true);
    const raw = readFileSync(log, 'utf8').split('\n');
    const messages: string[] = [];
    let clock = 0;
    const progress = createDebootstrapProgress((message) => messages.push(message), { now: () => clock });
    for (const line of raw) {
      clock += 10; // 10 ms a line: no heartbeat within this log
      progress.line(line);
    }
    progress.end();
    expect(raw.length).toBeGreaterThan(200);
    expect(messages.length).toBeLessThan(20);
    expect(messages).toContain('debootstrap: downloading packages…');
    const configured = messages.find((message) => message.startsWith('debootstrap: installing packages: '));
    expect(Number(/(\d+) done/.exec(configured ?? '')?.[1])).toBeGreaterThan(50);
  });
});
