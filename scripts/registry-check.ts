// The release check with a real npm registry: starts Verdaccio on loopback with a temp storage,
// publishes every public workspace package into it (`pnpm -r publish`, versions as in the
// repository), publishes docs/write-an-env.md's count-the-words env as a third-party pack, then in
// a fresh folder outside the monorepo runs the guide's install commands as written (npm, by name,
// from that registry; third-party dependencies come through Verdaccio from npmjs) and runs
// `shears process` and `shears evaluate` on the pack, and the TypeScript route (`npm install -D
// typescript @types/node`, the guide's tsconfig, `npx tsc`). Missing optional packages must be
// named with their install command (dockerode for the docker sandbox, csv-parse for CSV tasks).
// Needs `pnpm build` first and the npm registry reachable. Prints one JSON line per step with
// its time; exits non-zero naming the step that failed.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extractGuide } from '../packages/cli/src/test-support/guide-blocks.js';

const root = join(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'shears-registry-check-'));
const started = performance.now();

async function step<T>(name: string, action: () => T | Promise<T>): Promise<T> {
  const begin = performance.now();
  process.stderr.write(`registry-check: ${name}\n`);
  const result = await action();
  const seconds = (performance.now() - begin) / 1000;
  process.stdout.write(`${JSON.stringify({ step: name, seconds: Number(seconds.toFixed(1)) })}\n`);
  return result;
}

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function sh(command: string, cwd: string, env: Record<string, string> = {}): Ran {
  const result = spawnSync('bash', ['-c', command], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

function must(command: string, cwd: string, env: Record<string, string> = {}): string {
  const result = sh(command, cwd, env);
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout}\n${result.stderr}\n`);
    throw new Error(`registry-check: \`${command}\` in ${cwd} failed (exit ${result.status})`);
  }
  return result.stdout;
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`registry-check: ${message}`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

let verdaccio: ChildProcess | undefined;
try {
  const port = await freePort();
  const registry = `http://127.0.0.1:${port}/`;
  const npmrc = join(work, 'npmrc');
  // Every npm and pnpm call reads this user config: the registry and the token below.
  const env = {
    NPM_CONFIG_USERCONFIG: npmrc,
    npm_config_userconfig: npmrc,
    npm_config_registry: registry,
    // Kept between runs, so a second run downloads less.
    npm_config_cache:
      process.env.SHEARS_REGISTRY_CHECK_CACHE ?? join(tmpdir(), 'shears-registry-check-npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };

  await step('start verdaccio', async () => {
    const storage = join(work, 'storage');
    mkdirSync(storage);
    writeFileSync(
      join(work, 'verdaccio.yaml'),
      [
        `storage: ${storage}`,
        `auth: { htpasswd: { file: ${join(work, 'htpasswd')}, max_users: 10 } }`,
        'uplinks: { npmjs: { url: https://registry.npmjs.org/, timeout: 60s } }',
        'packages:',
        // Ours are only ever the ones published here, never fetched from npmjs.
        "  '@shears/*': { access: $all, publish: $all }",
        "  'shears-*': { access: $all, publish: $all }",
        "  '**': { access: $all, publish: $all, proxy: npmjs }",
        'log: { type: stdout, format: pretty, level: warn }',
        'max_body_size: 200mb',
      ].join('\n'),
    );
    verdaccio = spawn(
      process.execPath,
      [
        join(root, 'node_modules/verdaccio/bin/verdaccio'),
        '--config',
        join(work, 'verdaccio.yaml'),
        '--listen',
        `127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    verdaccio.stdout?.on('data', (chunk) => (output += chunk));
    verdaccio.stderr?.on('data', (chunk) => (output += chunk));
    for (let attempt = 0; ; attempt++) {
      if (verdaccio.exitCode !== null) throw new Error(`registry-check: verdaccio exited: ${output}`);
      const ping = await fetch(`${registry}-/ping`).catch(() => undefined);
      if (ping?.ok) break;
      check(attempt < 300, `verdaccio did not answer on ${registry} within 30 s: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // A user for publishing (npm refuses to publish without a token).
    const response = await fetch(`${registry}-/user/org.couchdb.user:release`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'release', password: 'release-check' }),
    });
    const body = (await response.json()) as { token?: string };
    check(
      response.ok && typeof body.token === 'string',
      `verdaccio refused the publishing user: ${JSON.stringify(body)}`,
    );
    writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${body.token}\n`);
  });

  await step('publish the workspace packages (pnpm -r publish)', () => {
    must(`pnpm -r publish --registry ${registry} --no-git-checks --access public`, root, env);
    const published = JSON.parse(must(`npm view @shears/cli --json`, work, env)) as { version: string };
    const expected = (
      JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8')) as { version: string }
    ).version;
    check(
      published.version === expected,
      `@shears/cli ${published.version} published, ${expected} in the repository`,
    );
  });

  const guide = extractGuide(readFileSync(join(root, 'docs/write-an-env.md'), 'utf8'));

  await step("publish the guide's env as a third-party pack", () => {
    const pack = join(work, 'pack');
    mkdirSync(pack);
    const core = (
      JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')) as { version: string }
    ).version;
    writeFileSync(join(pack, 'count-words.js'), guide.files.get('count-words.js')!);
    writeFileSync(
      join(pack, 'package.json'),
      `${JSON.stringify(
        {
          name: 'shears-pack-count-words',
          version: '1.0.0',
          type: 'module',
          exports: { '.': './count-words.js' },
          files: ['count-words.js'],
          peerDependencies: { '@shears/core': `^${core}`, zod: '^4.1.12' },
        },
        null,
        2,
      )}\n`,
    );
    must('npm publish', pack, env);
  });

  const project = join(work, 'project');
  mkdirSync(project);
  await step(
    'install as the guide says, by name, in a fresh folder (npm install @shears/cli @shears/core zod)',
    () => {
      for (const command of guide.install.filter((line) => !line.includes('typescript')))
        must(command, project, env);
      must('npm install shears-pack-count-words', project, env);
    },
  );

  await step('shears process and shears evaluate on the pack, by name', () => {
    must(
      'npx shears process --plugins shears-pack-count-words --env count-words --groups 2 --out runs/process.jsonl',
      project,
      env,
    );
    const groups = readFileSync(join(project, 'runs/process.jsonl'), 'utf8').trim().split('\n');
    check(groups.length === 2, `process wrote ${groups.length} groups, not 2`);
    const summary = JSON.parse(
      must(
        'npx shears evaluate --plugins shears-pack-count-words --env count-words --k 2 --json --out runs/eval.jsonl',
        project,
        env,
      ),
    ) as Record<string, unknown>;
    check(
      /"mean[_a-zA-Z]*":0\.5\b/.test(JSON.stringify(summary)),
      `evaluate's summary is not half right: ${JSON.stringify(summary).slice(0, 500)}`,
    );
  });

  await step('missing optional packages are named with the install command', () => {
    const docker = sh(
      'npx shears process --plugins shears-pack-count-words --env count-words --sandbox docker --groups 1 --out runs/docker.jsonl',
      project,
      env,
    );
    check(
      docker.status !== 0 && /npm install dockerode/.test(docker.stderr),
      `the docker sandbox without dockerode: exit ${docker.status}, ${docker.stderr.slice(-600)}`,
    );
    writeFileSync(join(project, 'tasks.csv'), 'id,text\na,one two three\n');
    const csv = sh(
      'npx shears evaluate --plugins shears-pack-count-words --env count-words --tasks tasks.csv --k 1 --out runs/csv.jsonl',
      project,
      env,
    );
    check(
      csv.status !== 0 && /npm install csv-parse/.test(csv.stderr),
      `CSV tasks without csv-parse: exit ${csv.status}, ${csv.stderr.slice(-600)}`,
    );
    must('npm install csv-parse', project, env);
    must(
      'npx shears evaluate --plugins shears-pack-count-words --env count-words --tasks tasks.csv --k 2 --out runs/csv.jsonl --force',
      project,
      env,
    );
  });

  await step(
    "the TypeScript route: npm install -D typescript @types/node, the guide's tsconfig, npx tsc",
    () => {
      for (const command of guide.install.filter((line) => line.includes('typescript')))
        must(command, project, env);
      for (const name of ['tsconfig.json', 'count-words-ts.ts'])
        writeFileSync(join(project, name), guide.files.get(name)!);
      must('npx tsc', project, env);
      const version = must('npx tsc --version', project, env).trim();
      process.stderr.write(`registry-check: compiled with ${version}\n`);
      must(
        'npx shears process --plugins ./dist/count-words-ts.js --env count-words-ts --groups 1 --out runs/ts.jsonl',
        project,
        env,
      );
    },
  );

  process.stdout.write(
    `${JSON.stringify({ step: 'total', seconds: Number(((performance.now() - started) / 1000).toFixed(1)) })}\n`,
  );
} finally {
  verdaccio?.kill();
  if (!process.env.SHEARS_REGISTRY_CHECK_KEEP) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`registry-check: kept ${work}\n`);
}
