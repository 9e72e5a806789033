// The release check, part of `pnpm test`: the packages as a user gets them from an npm registry.
// Starts Verdaccio (a devDependency) on a free loopback port with a storage of its own, packs
// every public workspace package with `pnpm pack` (the tarball `pnpm publish` and `changeset
// publish` upload: workspace: ranges turned into versions) and publishes it there with `npm
// publish`, with docs/write-an-env.md's env as a third-party pack. Then, in two projects outside
// the monorepo at once, installs them BY NAME from that registry (third-party dependencies come
// through Verdaccio from npmjs) and checks what a user meets:
//  - "user": the guide's install commands and its plain-JavaScript route, as written; with
//    @shears/cli alone, the demo runs, the plugins the CLI does not depend on are absent, and each
//    missing optional package (dockerode, @wandb/sdk, @shears/grpo, csv-parse) is named with the
//    command that installs it, before any rollout, by the command and by `shears doctor`; the
//    guide's TypeScript route with the TypeScript `npm install -D typescript` installs today.
//  - "full": every package and the packs in one install: the guide's env as a pack by name
//    (process, evaluate, CSV tasks), a TypeScript env pack in the low-level form
//    (registry-check/env-pack) compiled with skipLibCheck: false against every published entry
//    point's types, the Env conformance suite run on it, process (with the HTML report's assets)
//    and evaluate on it, shears-pack-hello and the SWE task pack, and every file a package's code
//    reads beside itself shipped with it.
// Needs the npm registry reachable (or what it needs in the cache below). Prints one JSON line per
// step with its time; a failure names the step, the command and the tail of its output, and
// exits 1. Verdaccio and the temporary folder are removed on success, failure, Ctrl-C and SIGTERM
// (SHEARS_REGISTRY_CHECK_KEEP=1 keeps the folder).
//
// Kept between runs under $SHEARS_REGISTRY_CHECK_CACHE (default <tmp>/shears-registry-check-cache):
// npm's cache (tarballs are found there by their integrity, whatever the registry's port),
// Verdaccio's copies of the third-party packages it proxied (hard-linked into each run's storage
// and back) and the full project's lockfile (see fullLane). Our own packages are never kept: each
// run publishes them afresh into a storage that is deleted at its end.
import { type ChildProcess, spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { homedir, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { extractGuide } from '../packages/cli/src/test-support/guide-blocks.js';

const root = join(import.meta.dirname, '..');
const cache = process.env.SHEARS_REGISTRY_CHECK_CACHE ?? join(tmpdir(), 'shears-registry-check-cache');
const uplinkCache = join(cache, 'verdaccio-uplink');
const started = performance.now();

// ---------------------------------------------------------------------------------------------
// Failures, steps, commands

/** A failed check: the message says what was expected; `tail` is the output that shows why. */
class CheckFailure extends Error {
  constructor(
    message: string,
    readonly tail = '',
  ) {
    super(message);
  }
}

function check(condition: boolean, message: string, tail = ''): asserts condition {
  if (!condition) throw new CheckFailure(message, tail);
}

function lastLines(text: string, count = 40): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}

async function step<T>(name: string, action: () => T | Promise<T>): Promise<T> {
  const begin = performance.now();
  process.stderr.write(`registry-check: ${name}\n`);
  const seconds = () => Number(((performance.now() - begin) / 1000).toFixed(1));
  try {
    const result = await action();
    process.stdout.write(`${JSON.stringify({ step: name, seconds: seconds() })}\n`);
    return result;
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ step: name, seconds: seconds(), failed: true })}\n`);
    // The step's name goes with the failure: checks run side by side, several may fail.
    if (error instanceof CheckFailure) throw new CheckFailure(`[${name}] ${error.message}`, error.tail);
    throw new CheckFailure(
      `[${name}] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }
}

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr as they came. */
  output: string;
}

const running = new Set<ChildProcess>();
let work = '';
let commandEnv: Record<string, string> = {};

// Commands run in a user's shell environment, not in pnpm's script environment: `pnpm
// registry-check` puts the repository's node_modules/.bin first on PATH, and sets NODE_PATH
// (which require() honours) and npm_* settings, any of which could let the project outside the
// repository find what it did not install.
const userEnv: Record<string, string | undefined> = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        key !== 'NODE_PATH' && key !== 'PNPM_SCRIPT_SRC_DIR' && key !== 'INIT_CWD' && !key.startsWith('npm_'),
    ),
  ),
  PATH: (process.env.PATH ?? '')
    .split(':')
    .filter((entry) => !entry.startsWith(root))
    .join(':'),
};

/** Where a folder is, for messages: inside the check's folder, relative to it. */
function where(cwd: string): string {
  return cwd.startsWith(work) ? `<check folder>${cwd.slice(work.length)}` : cwd;
}

/** Runs a shell command (the registry's npm settings in its environment); never throws. */
function sh(command: string, cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    if (cleanedUp)
      return resolve({ status: null, stdout: '', stderr: '', output: 'not run: the check is stopping' });
    const child = spawn('bash', ['-c', command], {
      cwd,
      env: { ...userEnv, ...commandEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    const ran: Ran = { status: null, stdout: '', stderr: '', output: '' };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      ran.stdout += chunk;
      ran.output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      ran.stderr += chunk;
      ran.output += chunk;
    });
    child.on('error', (error) => {
      ran.stderr += `${error.message}\n`;
      ran.output += `${error.message}\n`;
    });
    child.on('close', (status, signal) => {
      running.delete(child);
      ran.status = status ?? (signal ? 128 : null);
      resolve(ran);
    });
  });
}

/** Runs a command that must succeed; a failure names the command, the folder and the output. */
async function must(command: string, cwd: string): Promise<string> {
  const ran = await sh(command, cwd);
  check(
    ran.status === 0,
    `\`${command}\` in ${where(cwd)} failed (exit ${ran.status})`,
    lastLines(ran.output),
  );
  return ran.stdout;
}

/** At most `width` of `items` at a time; every failure is reported, not only the first. */
async function pool<T>(items: T[], width: number, action: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const failures: CheckFailure[] = [];
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift())
      await action(item).catch((error: unknown) =>
        failures.push(error instanceof CheckFailure ? error : new CheckFailure(String(error))),
      );
  };
  await Promise.all(Array.from({ length: width }, worker));
  if (failures.length > 0)
    throw new CheckFailure(
      failures.map((failure) => failure.message).join('\n'),
      failures.map((failure) => failure.tail).join('\n---\n'),
    );
}

/**
 * Runs independent checks at once (each is mostly process start-up, which a loaded machine
 * serves better side by side), each a step of its own; every failure is reported.
 */
async function checks(lane: string, named: Record<string, () => Promise<void>>): Promise<void> {
  await pool(Object.entries(named), Object.keys(named).length, ([name, run]) =>
    step(`${lane}: ${name}`, run),
  );
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

function readJsonl(path: string): Array<{ scores: number[]; taskId: string }> {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { scores: number[]; taskId: string });
}

// ---------------------------------------------------------------------------------------------
// Verdaccio's copies of third-party packages, kept between runs

/** Hard-links (or copies, across file systems) every file under `from` into `to`, replacing. */
function linkTree(from: string, to: string, skip: (name: string) => boolean = () => false): void {
  if (!existsSync(from)) return;
  for (const name of readdirSync(from)) {
    // Verdaccio's files half-written when it was stopped are left behind.
    if (skip(name) || name.includes('.tmp')) continue;
    const source = join(from, name);
    const target = join(to, name);
    const stat = statSync(source);
    if (stat.isDirectory()) {
      mkdirSync(target, { recursive: true });
      linkTree(source, target);
      continue;
    }
    if (existsSync(target) && statSync(target).ino === stat.ino) continue;
    // Verdaccio replaces a file by renaming a new one over it, so a linked file is never
    // written through; the same here: link beside, then rename over.
    const temporary = `${target}.link-${process.pid}`;
    try {
      linkSync(source, temporary);
    } catch {
      copyFileSync(source, temporary);
    }
    renameSync(temporary, target);
  }
}

/** Ours (published here each run) and Verdaccio's own files are never kept. */
const notThirdParty = (name: string) =>
  name === '@shears' || name.startsWith('shears-') || name.startsWith('.');

// ---------------------------------------------------------------------------------------------
// Clean-up: on success, on failure, on Ctrl-C and on SIGTERM

let verdaccio: ChildProcess | undefined;
let storage = '';
let cleanedUp = false;

function cleanUp(): void {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const child of running) child.kill('SIGTERM');
  verdaccio?.kill('SIGTERM');
  if (storage && existsSync(storage)) {
    try {
      mkdirSync(uplinkCache, { recursive: true });
      linkTree(storage, uplinkCache, notThirdParty);
    } catch (error) {
      process.stderr.write(`registry-check: could not keep Verdaccio's package copies: ${error}\n`);
    }
  }
  if (!work) return;
  if (process.env.SHEARS_REGISTRY_CHECK_KEEP) process.stderr.write(`registry-check: kept ${work}\n`);
  else rmSync(work, { recursive: true, force: true });
}

process.once('exit', cleanUp);
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const)
  process.once(signal, () => {
    process.stderr.write(`registry-check: ${signal}: stopping Verdaccio and removing ${work}\n`);
    cleanUp();
    process.exit(code);
  });

// ---------------------------------------------------------------------------------------------
// The check

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  devDependencies?: Record<string, string>;
}

// Workspace packages that are never published, by design: the test infrastructure and the toy
// pack the tests build from source. Any other private package fails the check.
const UNPUBLISHED = new Set(['@shears/test-infra', 'shears-pack-toy']);

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

async function main(): Promise<void> {
  work = mkdtempSync(join(tmpdir(), 'shears-registry-check-'));
  storage = join(work, 'storage');
  const rootManifest = readJson<Manifest>(join(root, 'package.json'));
  const guide = extractGuide(readFileSync(join(root, 'docs/write-an-env.md'), 'utf8'));

  const workspace = ['packages', 'examples'].flatMap((folder) =>
    readdirSync(join(root, folder))
      .map((name) => join(root, folder, name))
      .filter((dir) => existsSync(join(dir, 'package.json')))
      .map((dir) => ({ dir, manifest: readJson<Manifest>(join(dir, 'package.json')) })),
  );
  for (const { manifest } of workspace)
    check(
      !manifest.private || UNPUBLISHED.has(manifest.name),
      `${manifest.name} is private: it cannot be published or installed from npm`,
    );
  const published = workspace.filter(({ manifest }) => !manifest.private);
  const names = published.map(({ manifest }) => manifest.name);

  // Built and packed while Verdaccio starts. `pnpm pack` makes the tarball `pnpm publish` (and
  // `changeset publish`) would upload, with the workspace: ranges turned into versions.
  const tarballs = join(work, 'tarballs');
  const packed = (async () => {
    await step('build (turbo, cached)', () => must('pnpm turbo run build --output-logs=errors-only', root));
    await step(`pack ${names.length} workspace packages (pnpm -r pack)`, async () => {
      mkdirSync(tarballs);
      await must(
        `pnpm ${names.map((name) => `--filter ${name}`).join(' ')} -r pack --pack-destination ${tarballs} --workspace-concurrency 4`,
        root,
      );
    });
  })();
  // Not left unhandled while Verdaccio starts; awaited below.
  packed.catch(() => undefined);

  const registry = await step('start verdaccio', async () => {
    const port = await freePort();
    const registry = `http://127.0.0.1:${port}/`;
    mkdirSync(storage);
    writeFileSync(
      join(work, 'verdaccio.yaml'),
      [
        `storage: ${storage}`,
        `auth: { htpasswd: { file: ${join(work, 'htpasswd')}, max_users: 10 } }`,
        // A package document kept from npmjs is used for 30 minutes before asking again.
        'uplinks: { npmjs: { url: https://registry.npmjs.org/, timeout: 60s, maxage: 30m } }',
        'packages:',
        // Ours are only ever the ones published here, never fetched from npmjs.
        "  '@shears/*': { access: $all, publish: $all }",
        "  'shears-*': { access: $all, publish: $all }",
        "  '**': { access: $all, publish: $all, proxy: npmjs }",
        'web: { enable: false }',
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
    // While it starts (it reads its storage only when asked for a package).
    linkTree(uplinkCache, storage, notThirdParty);
    for (let attempt = 0; ; attempt++) {
      check(verdaccio.exitCode === null, `verdaccio exited (${verdaccio.exitCode})`, lastLines(output));
      const ping = await fetch(`${registry}-/ping`).catch(() => undefined);
      if (ping?.ok) break;
      check(attempt < 600, `verdaccio did not answer on ${registry} within 60 s`, lastLines(output));
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
    // The user's npm settings (nodedir, proxies, ...), then the registry and its token.
    const userNpmrc = userEnv.NPM_CONFIG_USERCONFIG ?? join(homedir(), '.npmrc');
    const npmrc = join(work, 'npmrc');
    writeFileSync(
      npmrc,
      `${existsSync(userNpmrc) ? readFileSync(userNpmrc, 'utf8') : ''}\nregistry=${registry}\n//127.0.0.1:${port}/:_authToken=${body.token}\n`,
    );
    // Every npm and pnpm call reads these: the registry and its token, npm's kept cache. Not
    // --prefer-offline: a later run's registry may get the same port, and a cached document of
    // ours from that run would then be taken for the new one (same version, other contents).
    commandEnv = {
      NPM_CONFIG_USERCONFIG: npmrc,
      npm_config_userconfig: npmrc,
      npm_config_registry: registry,
      npm_config_cache: join(cache, 'npm'),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      npm_config_progress: 'false',
    };
    return registry;
  });

  await packed;
  await step(
    `publish ${names.length} workspace packages and the guide's env as a pack (npm publish)`,
    async () => {
      const pack = join(work, 'pack');
      mkdirSync(pack);
      writeFileSync(join(pack, 'count-words.js'), guide.files.get('count-words.js')!);
      const core = readJson<Manifest>(join(root, 'packages/core/package.json')).version;
      writeFileSync(
        join(pack, 'package.json'),
        `${JSON.stringify(
          {
            name: 'shears-pack-count-words',
            version: '1.0.0',
            type: 'module',
            exports: { '.': './count-words.js' },
            files: ['count-words.js'],
            peerDependencies: { '@shears/core': `^${core}`, zod: rootManifest.devDependencies!.zod },
          },
          null,
          2,
        )}\n`,
      );
      const uploads = [
        ...published.map(({ manifest }) => ({
          manifest,
          tarball: join(
            tarballs,
            `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`,
          ),
          cwd: work,
        })),
        { manifest: { name: 'shears-pack-count-words', version: '1.0.0' }, tarball: '', cwd: pack },
      ];
      for (const { manifest, tarball } of uploads)
        check(
          !tarball || existsSync(tarball),
          `pnpm pack wrote no tarball for ${manifest.name} (${tarball})`,
        );
      await pool(uploads, 8, async ({ manifest, tarball, cwd }) => {
        const ran = await sh(`npm publish ${tarball} --access public`, cwd);
        check(
          ran.status === 0,
          `publishing ${manifest.name} failed (exit ${ran.status})`,
          lastLines(ran.output),
        );
        const document = (await (await fetch(`${registry}${manifest.name.replace('/', '%2f')}`)).json()) as {
          'dist-tags'?: { latest?: string };
        };
        check(
          document['dist-tags']?.latest === manifest.version,
          `${manifest.name}: the registry's latest is ${document['dist-tags']?.latest}, the repository's version ${manifest.version}`,
        );
      });
    },
  );

  // Two projects, installed and checked at once: "user" is what docs/write-an-env.md has a user do
  // (@shears/cli alone, then TypeScript); "full" has every package, installed in one command.
  await Promise.all([userLane(), fullLane()]);

  async function userLane(): Promise<void> {
    const project = join(work, 'user');
    mkdirSync(project);
    writeFileSync(join(project, 'count-words.js'), guide.files.get('count-words.js')!);
    writeFileSync(join(project, 'tasks.jsonl'), guide.files.get('tasks.jsonl')!);
    const shears = join(project, 'node_modules/.bin/shears');
    const install = guide.install.filter((line) => !line.includes('typescript'));
    const installTypeScript = guide.install.filter((line) => line.includes('typescript'));

    await step(`user: the guide's install, as written (${install.join('; ')})`, async () => {
      for (const command of install) await must(command, project);
      check(
        existsSync(join(project, 'node_modules/@shears/cli/shears.schema.json')),
        'node_modules/@shears/cli/shears.schema.json (the $schema path the docs give) is missing',
      );
      for (const absent of [
        '@shears/grpo',
        '@shears/envs-swe',
        '@shears/tools-web',
        '@shears/tools-mcp',
        '@shears/gateway',
        'better-sqlite3',
        // Optional peers of tools-terminal and the CLI, loaded only by the docker and ssh sandboxes.
        'dockerode',
        'docker-modem',
        'ssh2',
        // The CLI's optional peer for the wandb section; core's for CSV task files.
        '@wandb/sdk',
        'csv-parse',
      ])
        check(!existsSync(join(project, 'node_modules', absent)), `@shears/cli alone installed ${absent}`);
    });

    writeFileSync(
      join(project, 'docker.yaml'),
      'env: { name: demo }\nsandbox: { provider: docker }\nrun: { groups: 1, out: runs/docker.jsonl, progress: lines }\n',
    );
    writeFileSync(
      join(project, 'wandb.yaml'),
      'env: { name: demo }\nrun: { groups: 1, out: runs/wandb.jsonl }\nwandb: { project: p }\n',
    );
    writeFileSync(join(project, 'tasks.csv'), 'id,text\na,one two three\n');
    await checks('user', {
      "the guide's plain-JavaScript route, as written (npx shears process, evaluate)": async () => {
        for (const command of guide.commands.filter((line) => line.includes('./count-words.js')))
          await must(command, project);
        check(
          readJsonl(join(project, 'runs/count-words.jsonl')).length === 2,
          "the guide's process did not write 2 groups",
        );
      },
      'the demo runs with @shears/cli alone': async () => {
        await must(`${shears} process --env demo --groups 2 --out runs/demo.jsonl --no-report`, project);
        check(readJsonl(join(project, 'runs/demo.jsonl')).length === 2, 'the demo did not write 2 groups');
      },
      'shears api names @shears/grpo': async () => {
        const api = await sh(`${shears} api`, project);
        check(
          api.status === 1 && api.stderr.includes('run `npm install @shears/grpo` in your project'),
          `shears api without @shears/grpo should name it (exit ${api.status})`,
          lastLines(api.output),
        );
      },
      'the docker sandbox names dockerode before any rollout': async () => {
        // Not a module-resolution stack trace, not rollouts failing one by one.
        const docker = await sh(`${shears} process --config docker.yaml`, project);
        check(
          docker.status !== 0 &&
            docker.stderr.includes(
              'needs the "dockerode" package, which is not installed: run `npm install dockerode`',
            ) &&
            !/\n\s+at /.test(docker.stderr) &&
            !existsSync(join(project, 'runs/docker.jsonl')),
          `sandbox.provider: docker without dockerode should fail naming it before any rollout (exit ${docker.status})`,
          lastLines(docker.output),
        );
      },
      'shears doctor names dockerode': async () => {
        const doctor = await sh(`${shears} doctor --config docker.yaml --json`, project);
        const line = (
          JSON.parse(doctor.stdout) as Array<{ name: string; status: string; fix?: string }>
        ).find((entry) => entry.name === 'package dockerode');
        check(
          doctor.status !== 0 && line?.status === 'fail' && line.fix === 'npm install dockerode',
          `shears doctor should list dockerode as not installed (exit ${doctor.status})`,
          lastLines(doctor.output),
        );
      },
      'a wandb section names @wandb/sdk before any rollout': async () => {
        const wandb = await sh(`${shears} process --config wandb.yaml`, project);
        check(
          wandb.status === 2 &&
            wandb.stderr.includes(
              'needs the "@wandb/sdk" package, which is not installed: run `npm install @wandb/sdk`',
            ) &&
            !existsSync(join(project, 'runs/wandb.jsonl')),
          `a wandb section without @wandb/sdk should fail naming it before any rollout (exit ${wandb.status})`,
          lastLines(wandb.output),
        );
      },
      'shears doctor names @wandb/sdk': async () => {
        const doctor = await sh(`${shears} doctor --config wandb.yaml --json`, project);
        const line = (
          JSON.parse(doctor.stdout) as Array<{ name: string; status: string; fix?: string }>
        ).find((entry) => entry.name === 'wandb');
        check(
          line?.status === 'fail' && line.fix === 'npm install @wandb/sdk',
          'shears doctor should list @wandb/sdk as not installed',
          lastLines(doctor.output),
        );
      },
      'CSV tasks name csv-parse': async () => {
        const csv = await sh(
          `${shears} evaluate --plugins ./count-words.js --env count-words --tasks tasks.csv --k 1 --out runs/csv.jsonl`,
          project,
        );
        check(
          csv.status !== 0 && csv.stderr.includes('npm install csv-parse'),
          `CSV tasks without csv-parse should name it (exit ${csv.status})`,
          lastLines(csv.output),
        );
      },
    });

    await step(
      `user: the guide's TypeScript route (${installTypeScript.join('; ')}, its tsconfig, npx tsc)`,
      async () => {
        for (const command of installTypeScript) await must(command, project);
        for (const name of ['tsconfig.json', 'count-words-ts.ts'])
          writeFileSync(join(project, name), guide.files.get(name)!);
        for (const command of guide.commands.filter((line) => !line.includes('./count-words.js')))
          await must(command, project);
        const version = (await must('npx tsc --version', project)).trim();
        process.stderr.write(`registry-check: the guide's TypeScript compiled with ${version}\n`);
        check(
          readJsonl(join(project, 'runs/count-words-ts.jsonl')).length === 2,
          'the TypeScript env did not write 2 groups',
        );
      },
    );
  }

  async function fullLane(): Promise<void> {
    const project = join(work, 'full');
    mkdirSync(project);
    writeFileSync(join(project, 'tasks.csv'), 'id,text\na,one two three\n');
    const shears = join(project, 'node_modules/.bin/shears');
    // The user project resolves every dependency afresh, as a user's first install does. This one
    // starts from the lockfile of the last run within a day, less the entries of our packages
    // (published again, with new contents under the same versions): npm then asks the registry
    // only about those, instead of walking some 300 package documents one after another.
    const kept = join(cache, 'full');
    const fresh =
      !existsSync(join(kept, 'package-lock.json')) ||
      Date.now() - statSync(join(kept, 'package-lock.json')).mtimeMs > 24 * 3600_000;
    if (fresh)
      writeFileSync(
        join(project, 'package.json'),
        `${JSON.stringify({ name: 'shears-full', version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
      );
    else {
      cpSync(join(kept, 'package.json'), join(project, 'package.json'));
      const lock = readJson<{
        packages: Record<string, { name?: string; version?: string; integrity?: string; resolved?: string }>;
      }>(join(kept, 'package-lock.json'));
      for (const [key, entry] of Object.entries(lock.packages)) {
        if (/(^|\/)node_modules\/(@shears\/|shears-)/.test(key)) delete lock.packages[key];
        // The tarball's address at this run's registry (the last run's had another port, and
        // `omit-lockfile-registry-resolved` leaves it out): with it and the integrity, npm takes
        // the tarball from its cache, or else from this registry, without asking for documents.
        else if (key && entry.version && entry.integrity) {
          const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
          entry.resolved = `${registry}${name}/-/${name.split('/').at(-1)}-${entry.version}.tgz`;
        }
      }
      writeFileSync(join(project, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
    }

    await step(
      `full: npm install --ignore-scripts, by name, all ${names.length} packages, the guide's pack, csv-parse, vitest, typescript (${fresh ? 'no lockfile' : "the last run's lockfile, less ours"})`,
      async () => {
        // --ignore-scripts: better-sqlite3 (@shears/grpo's) would be compiled from source here,
        // about ten minutes on a loaded machine, where a user's npm downloads a prebuilt binary.
        // Nothing below runs it: @shears/grpo's runtime is the workspace tests', its types are
        // checked below. The user project above runs every install script.
        await must(
          `npm install --ignore-scripts ${names.join(' ')} shears-pack-count-words csv-parse 'vitest@${rootManifest.devDependencies!.vitest}' typescript @types/node`,
          project,
        );
        mkdirSync(kept, { recursive: true });
        for (const name of ['package.json', 'package-lock.json']) {
          copyFileSync(join(project, name), join(kept, `${name}.${process.pid}`));
          renameSync(join(kept, `${name}.${process.pid}`), join(kept, name));
        }
      },
    );

    const answers = join(project, 'answers-pack');
    cpSync(join(root, 'scripts/registry-check/env-pack'), answers, { recursive: true });
    writeFileSync(
      join(answers, 'package.json'),
      `${JSON.stringify({ name: 'shears-pack-answers', version: '0.0.0', private: true, type: 'module', main: './dist/index.js' }, null, 2)}\n`,
    );
    writeFileSync(
      join(project, 'shears.yaml'),
      [
        '$schema: ./node_modules/@shears/cli/shears.schema.json',
        'plugins: [./answers-pack/dist/index.js]',
        'env: { name: answers, group_size: 2, toolsets: { enabled: [answers] } }',
        'run: { groups: 3, out: runs/answers.jsonl, progress: lines }',
        '',
      ].join('\n'),
    );

    await checks('full', {
      'a TypeScript env pack: compiled with skipLibCheck: false against every entry point, the Env conformance suite, process (with the HTML report) and evaluate':
        async () => {
          await must(`${join(project, 'node_modules/.bin/tsc')} -p tsconfig.json`, answers);
          await Promise.all([
            must(`CI=true ${join(project, 'node_modules/.bin/vitest')} run --root . test`, answers),
            (async () => {
              await must(`${shears} process --config shears.yaml`, project);
              const groups = readJsonl(join(project, 'runs/answers.jsonl'));
              check(
                groups.length === 3,
                `process with the TypeScript pack wrote ${groups.length} groups, expected 3`,
              );
              check(
                groups.flatMap((group) => group.scores).includes(1),
                'the demo policy solved no task of the TypeScript pack',
              );
              // The report's browser code and uPlot are asset files read from the installed package.
              const report = readFileSync(join(project, 'runs/answers.html'), 'utf8');
              check(
                report.includes('window.shearsDashboard = createDashboard') && report.includes('uPlot'),
                'the HTML report lacks the dashboard or uPlot (assets missing from the package?)',
              );
            })(),
            (async () => {
              const stdout = await must(
                `${shears} evaluate --plugins ./answers-pack/dist/index.js --env answers --k 2 --out runs/answers-eval.jsonl --json`,
                project,
              );
              const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
                tasks: unknown[];
                passAtK: Record<string, number>;
              };
              check(summary.tasks.length === 4, `evaluate scored ${summary.tasks.length} tasks, expected 4`);
              check(summary.passAtK['pass@2'] === 1, `pass@2 is ${summary.passAtK['pass@2']}, expected 1`);
            })(),
          ]);
        },
      "the guide's env as a pack, by name: shears process": async () => {
        await must(
          `${shears} process --plugins shears-pack-count-words --env count-words --groups 2 --out runs/pack.jsonl`,
          project,
        );
        check(
          readJsonl(join(project, 'runs/pack.jsonl')).length === 2,
          'process with the pack did not write 2 groups',
        );
      },
      "the guide's env as a pack, by name: shears evaluate": async () => {
        const summary = await must(
          `${shears} evaluate --plugins shears-pack-count-words --env count-words --k 2 --json --out runs/pack-eval.jsonl`,
          project,
        );
        check(
          /"mean[_a-zA-Z]*":0\.5\b/.test(summary.replace(/\s/g, '')),
          "evaluate's summary of the pack is not half right",
          lastLines(summary),
        );
      },
      'CSV tasks with csv-parse installed': async () => {
        await must(
          `${shears} evaluate --plugins shears-pack-count-words --env count-words --tasks tasks.csv --k 2 --out runs/csv.jsonl`,
          project,
        );
      },
      'shears-pack-hello by name': async () => {
        await must(
          `${shears} process --plugins shears-pack-hello --env hello --groups 2 --out runs/hello.jsonl --no-report`,
          project,
        );
        check(
          readJsonl(join(project, 'runs/hello.jsonl')).length === 2,
          'shears-pack-hello: expected 2 groups',
        );
      },
      ...Object.fromEntries(
        ['shears-swe-pack-example', join(root, 'examples/swe-pack-example/tasks')].map((tasks) => [
          `the SWE env with --tasks ${tasks.startsWith('/') ? 'a folder' : tasks}`,
          async () => {
            // doctor creates the env (resolving --tasks) before it checks Docker, which may be absent.
            const doctor = await sh(`${shears} doctor --env swe --tasks ${tasks} --json`, project);
            const env = (
              JSON.parse(doctor.stdout) as Array<{ name: string; status: string; detail: string }>
            ).find((entry) => entry.name === 'env');
            check(
              env?.status === 'ok',
              `--tasks ${tasks}: the SWE env was not created (${env?.detail})`,
              lastLines(doctor.output),
            );
          },
        ]),
      ),
      'files the packages read beside their code ship with them': async () => {
        // Each `new URL('<relative path>', import.meta.url)` in a published dist/ file (envs-swe's
        // pytest launcher, the CLI's package.json) must resolve to a file inside the installed package.
        let found = 0;
        for (const name of names) {
          check(existsSync(join(project, 'node_modules', name)), `${name} was not installed`);
          const dist = join(project, 'node_modules', name, 'dist');
          if (!existsSync(dist)) continue;
          for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
            if (!file.endsWith('.js')) continue;
            const code = readFileSync(join(dist, file), 'utf8');
            for (const match of code.matchAll(/new URL\((['"])(\.{1,2}\/[^'"]+)\1, import\.meta\.url\)/g)) {
              const target = join(dist, dirname(file), match[2] as string);
              check(
                existsSync(target),
                `${name}: dist/${file} reads ${match[2]}, which the package does not ship`,
              );
              found++;
            }
          }
        }
        check(
          found > 0,
          'no dist file reads a file beside it: the pattern above no longer matches the build',
        );
        const launcher = join(project, 'node_modules/@shears/envs-swe/assets/pytest-launcher.py');
        await must(
          `python3 -I -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' ${launcher}`,
          project,
        );
      },
    });
  }
}

try {
  await main();
  process.stdout.write(
    `${JSON.stringify({
      step: 'total',
      seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      load: loadavg().map((value) => Number(value.toFixed(1))),
    })}\n`,
  );
  cleanUp();
} catch (error) {
  const failure =
    error instanceof CheckFailure
      ? error
      : new CheckFailure(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.stderr.write(
    `\nregistry-check: FAILED ${failure.message}\n${failure.tail ? `--- output (last lines) ---\n${failure.tail}\n---\n` : ''}`,
  );
  // The other project's checks may still be running: stop them with Verdaccio (the exit handler).
  process.exit(1);
}
