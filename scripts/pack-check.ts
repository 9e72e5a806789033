// The packed packages as a user gets them: packs every publishable package (pnpm pack turns
// `workspace:*` into versions), installs the tarballs with npm into a project outside the
// workspace, compiles a TypeScript env pack there with strict type checking and skipLibCheck:
// false (every published .d.ts a user can reach is checked), runs the Env conformance suite on
// it, and runs `shears process` and `shears evaluate` with it (and with the example pack
// shears-pack-hello, installed from its tarball as its README says), and runs the demo in a
// second project with @shears/cli installed alone (without dockerode and ssh2, whose sandboxes
// then name the package to install). Part of `pnpm test`.
//
// The consumer project is kept between runs ($SHEARS_PACK_CHECK_DIR, default
// <tmp>/shears-pack-check) so npm reuses what did not change, better-sqlite3's native build
// included; every run installs the fresh tarballs. Prints one JSON line per step with its time.
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const root = join(import.meta.dirname, '..');
const work = process.env.SHEARS_PACK_CHECK_DIR ?? join(tmpdir(), 'shears-pack-check');
const tarballs = join(work, 'tarballs');
const project = join(work, 'consumer');

async function step<T>(name: string, action: () => T | Promise<T>): Promise<T> {
  const started = performance.now();
  process.stderr.write(`pack-check: ${name}\n`);
  const result = await action();
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`${JSON.stringify({ step: name, seconds: Number(seconds.toFixed(1)) })}\n`);
  return result;
}

/** Runs a command; on failure prints its output and exits with a message naming the step. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ''}\n${result.stderr ?? ''}\n`);
    throw new Error(
      `pack-check: \`${command} ${args.join(' ')}\` in ${relative(root, cwd) || cwd} failed (exit ${result.status}${result.error ? `, ${result.error.message}` : ''})`,
    );
  }
  return result.stdout;
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`pack-check: ${message}`);
}

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
}

// Workspace packages that are never published, by design (the test infrastructure).
const UNPUBLISHED = new Set(['@shears/test-infra']);

const packageDirs = [
  ...readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name)),
  join(root, 'examples', 'hello-pack'),
  join(root, 'examples', 'swe-pack-example'),
].filter(
  (dir) =>
    existsSync(join(dir, 'package.json')) &&
    !UNPUBLISHED.has((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest).name),
);

await step('build', () => run('pnpm', ['turbo', 'run', 'build', '--output-logs=errors-only'], root));

const packed = await step('pack', async () => {
  rmSync(tarballs, { recursive: true, force: true });
  mkdirSync(tarballs, { recursive: true });
  const manifests = packageDirs.map((dir) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    check(!manifest.private, `${manifest.name} is private; it cannot be published or installed from npm`);
    return { dir, manifest };
  });
  // A few at a time: each `pnpm pack` is mostly process start-up.
  const queue = [...manifests];
  const packOne = async (): Promise<void> => {
    for (let next = queue.shift(); next; next = queue.shift())
      await execFileAsync('pnpm', ['pack', '--pack-destination', tarballs], { cwd: next.dir }).catch(
        (error: Error & { stderr?: string }) => {
          throw new Error(
            `pack-check: pnpm pack in ${relative(root, next!.dir)} failed: ${error.stderr ?? error.message}`,
          );
        },
      );
  };
  await Promise.all([packOne(), packOne(), packOne()]);
  const result: Record<string, string> = {};
  for (const { manifest } of manifests) {
    const file = `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`;
    check(existsSync(join(tarballs, file)), `pnpm pack wrote no tarball for ${manifest.name}`);
    result[manifest.name] = join(tarballs, file);
  }
  return result;
});

await step('install with npm outside the workspace', () => {
  mkdirSync(project, { recursive: true });
  // Fresh sources every run. node_modules and the lockfile stay, minus the entries of the packed
  // packages, so npm takes the new tarballs and keeps the rest (better-sqlite3's native build).
  for (const entry of ['src', 'test', 'dist', 'runs'])
    rmSync(join(project, entry), { recursive: true, force: true });
  const lockfile = join(project, 'package-lock.json');
  if (existsSync(lockfile)) {
    const lock = JSON.parse(readFileSync(lockfile, 'utf8')) as { packages?: Record<string, unknown> };
    for (const key of Object.keys(lock.packages ?? {}))
      if (
        Object.keys(packed).some(
          (name) => key === `node_modules/${name}` || key.startsWith(`node_modules/${name}/`),
        )
      )
        delete lock.packages![key];
    writeFileSync(lockfile, `${JSON.stringify(lock, null, 2)}\n`);
  }
  // Same version numbers, new contents: remove the installed copies so npm cannot keep them.
  for (const name of Object.keys(packed))
    rmSync(join(project, 'node_modules', name), { recursive: true, force: true });
  cpSync(join(root, 'scripts', 'pack-check', 'env-pack'), project, { recursive: true });
  const files = Object.fromEntries(Object.entries(packed).map(([name, file]) => [name, `file:${file}`]));
  const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify(
      {
        name: 'shears-pack-answers',
        version: '0.0.0',
        private: true,
        type: 'module',
        main: './dist/index.js',
        dependencies: {
          ...files,
          zod: rootManifest.devDependencies.zod,
        },
        devDependencies: {
          typescript: rootManifest.devDependencies.typescript,
          '@types/node': rootManifest.devDependencies['@types/node'],
          vitest: rootManifest.devDependencies.vitest,
        },
        // Every @shears package, wherever it is depended on, is the tarball just packed.
        overrides: files,
      },
      null,
      2,
    )}\n`,
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], project);
  check(
    existsSync(join(project, 'node_modules', '@shears', 'cli', 'shears.schema.json')),
    'node_modules/@shears/cli/shears.schema.json (the $schema path the docs give) is missing',
  );
});

await step('compile the TypeScript env pack (strict, skipLibCheck: false)', () =>
  run(join(project, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], project),
);

await step('run the Env conformance suite on it', () =>
  run(join(project, 'node_modules', '.bin', 'vitest'), ['run', '--root', project, 'test'], project, {
    CI: 'true',
  }),
);

const shears = join(project, 'node_modules', '.bin', 'shears');

function readJsonl(path: string): Array<{ scores: number[]; taskId: string }> {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { scores: number[]; taskId: string });
}

await step('shears process with the pack', () => {
  writeFileSync(
    join(project, 'shears.yaml'),
    [
      '$schema: ./node_modules/@shears/cli/shears.schema.json',
      'plugins: [./dist/index.js]',
      'env: { name: answers, group_size: 2, toolsets: { enabled: [answers] } }',
      'run: { groups: 3, out: runs/answers.jsonl, progress: lines }',
      '',
    ].join('\n'),
  );
  run(shears, ['process', '--config', 'shears.yaml'], project);
  const groups = readJsonl(join(project, 'runs', 'answers.jsonl'));
  check(groups.length === 3, `process wrote ${groups.length} groups, expected 3`);
  check(groups.flatMap((group) => group.scores).includes(1), 'the demo policy solved no task of the pack');
  check(existsSync(join(project, 'runs', 'answers.html')), 'process wrote no HTML report');
  // The report's browser code and uPlot are asset files read from the installed package.
  const report = readFileSync(join(project, 'runs', 'answers.html'), 'utf8');
  check(
    report.includes('window.shearsDashboard = createDashboard') && report.includes('uPlot'),
    'the HTML report lacks the dashboard or uPlot (assets missing from the package?)',
  );
});

await step('shears evaluate with the pack', () => {
  const stdout = run(
    shears,
    [
      'evaluate',
      '--plugins',
      './dist/index.js',
      '--env',
      'answers',
      '--k',
      '2',
      '--out',
      'runs/eval.jsonl',
      '--json',
    ],
    project,
  );
  const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    tasks: unknown[];
    passAtK: Record<string, number>;
  };
  check(summary.tasks.length === 4, `evaluate scored ${summary.tasks.length} tasks, expected 4`);
  check(summary.passAtK['pass@2'] === 1, `pass@2 is ${summary.passAtK['pass@2']}, expected 1`);
});

await step('shears process with shears-pack-hello from its tarball', () => {
  run(
    shears,
    [
      'process',
      '--plugins',
      'shears-pack-hello',
      '--env',
      'hello',
      '--groups',
      '2',
      '--out',
      'runs/hello.jsonl',
      '--no-report',
    ],
    project,
  );
  check(readJsonl(join(project, 'runs', 'hello.jsonl')).length === 2, 'shears-pack-hello: expected 2 groups');
});

await step('the SWE task pack by package name and by folder', () => {
  for (const tasks of ['shears-swe-pack-example', join(root, 'examples', 'swe-pack-example', 'tasks')]) {
    // doctor creates the env (resolving --tasks) before it checks Docker, which may be absent here.
    const result = spawnSync(shears, ['doctor', '--env', 'swe', '--tasks', tasks, '--json'], {
      cwd: project,
      encoding: 'utf8',
    });
    const checks = JSON.parse(result.stdout) as Array<{ name: string; status: string; detail: string }>;
    const env = checks.find((entry) => entry.name === 'env');
    check(env?.status === 'ok', `--tasks ${tasks}: the SWE env was not created (${env?.detail})`);
  }
});

await step('@shears/cli alone: the demo runs; api, docker and wandb name the package to install', () => {
  // A second project with only @shears/cli (and what it depends on): the README's first command
  // must work without the plugins the CLI does not depend on (docs/decisions/cli-dependencies.md).
  const alone = join(work, 'cli-alone');
  mkdirSync(alone, { recursive: true });
  for (const name of Object.keys(packed))
    rmSync(join(alone, 'node_modules', name), { recursive: true, force: true });
  rmSync(join(alone, 'package-lock.json'), { force: true });
  rmSync(join(alone, 'runs'), { recursive: true, force: true });
  const files = Object.fromEntries(Object.entries(packed).map(([name, file]) => [name, `file:${file}`]));
  writeFileSync(
    join(alone, 'package.json'),
    `${JSON.stringify({ name: 'shears-cli-alone', version: '0.0.0', private: true, dependencies: { '@shears/cli': files['@shears/cli'] }, overrides: files }, null, 2)}\n`,
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], alone);
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
    // The CLI's optional peer for the wandb section.
    '@wandb/sdk',
  ])
    check(!existsSync(join(alone, 'node_modules', absent)), `@shears/cli alone installed ${absent}`);
  const cli = join(alone, 'node_modules', '.bin', 'shears');
  run(cli, ['process', '--env', 'demo', '--groups', '2', '--out', 'runs/demo.jsonl', '--no-report'], alone);
  check(
    readJsonl(join(alone, 'runs', 'demo.jsonl')).length === 2,
    '@shears/cli alone: expected 2 demo groups',
  );
  const api = spawnSync(cli, ['api'], { cwd: alone, encoding: 'utf8' });
  check(
    api.status === 1 && api.stderr.includes('run `npm install @shears/grpo` in your project'),
    `@shears/cli alone: shears api should name @shears/grpo (exit ${api.status}): ${api.stderr}`,
  );
  // The docker sandbox without dockerode: refused before the run, naming the package and the
  // command (not a module-resolution stack trace, not rollouts failing one by one).
  writeFileSync(
    join(alone, 'docker.yaml'),
    'env: { name: demo }\nsandbox: { provider: docker }\nrun: { groups: 1, out: runs/docker.jsonl, progress: lines }\n',
  );
  const needs = 'needs the "dockerode" package, which is not installed: run `npm install dockerode`';
  const docker = spawnSync(cli, ['process', '--config', 'docker.yaml'], { cwd: alone, encoding: 'utf8' });
  check(
    docker.status !== 0 &&
      docker.stderr.includes(needs) &&
      !/\n\s+at /.test(docker.stderr) &&
      !existsSync(join(alone, 'runs', 'docker.jsonl')),
    `@shears/cli alone: sandbox.provider: docker should fail naming dockerode before any rollout (exit ${docker.status}): ${docker.stderr}`,
  );
  const doctor = spawnSync(cli, ['doctor', '--config', 'docker.yaml', '--json'], {
    cwd: alone,
    encoding: 'utf8',
  });
  const line = (JSON.parse(doctor.stdout) as Array<{ name: string; status: string; fix?: string }>).find(
    (entry) => entry.name === 'package dockerode',
  );
  check(
    doctor.status !== 0 && line?.status === 'fail' && line.fix === 'npm install dockerode',
    `@shears/cli alone: shears doctor should list dockerode as not installed (exit ${doctor.status}): ${doctor.stdout}`,
  );
  // A wandb section without @wandb/sdk: refused before the run, naming the install command; doctor lists it.
  writeFileSync(
    join(alone, 'wandb.yaml'),
    'env: { name: demo }\nrun: { groups: 1, out: runs/wandb.jsonl }\nwandb: { project: p }\n',
  );
  const wandbNeeds = 'needs the "@wandb/sdk" package, which is not installed: run `npm install @wandb/sdk`';
  const wandb = spawnSync(cli, ['process', '--config', 'wandb.yaml'], { cwd: alone, encoding: 'utf8' });
  check(
    wandb.status === 2 &&
      wandb.stderr.includes(wandbNeeds) &&
      !existsSync(join(alone, 'runs', 'wandb.jsonl')),
    `@shears/cli alone: a wandb section should fail naming @wandb/sdk before any rollout (exit ${wandb.status}): ${wandb.stderr}`,
  );
  const wandbDoctor = spawnSync(cli, ['doctor', '--config', 'wandb.yaml', '--json'], {
    cwd: alone,
    encoding: 'utf8',
  });
  const wandbLine = (
    JSON.parse(wandbDoctor.stdout) as Array<{ name: string; status: string; fix?: string }>
  ).find((entry) => entry.name === 'wandb');
  check(
    wandbLine?.status === 'fail' && wandbLine.fix === 'npm install @wandb/sdk',
    `@shears/cli alone: shears doctor should list @wandb/sdk as not installed: ${wandbDoctor.stdout}`,
  );
});

await step('files the packages read beside their code ship with them', () => {
  // Each `new URL('<relative path>', import.meta.url)` in a published dist/ file (envs-swe's pytest
  // launcher, the CLI's package.json) must resolve to a file inside the installed package.
  let found = 0;
  for (const name of Object.keys(packed)) {
    const dist = join(project, 'node_modules', name, 'dist');
    if (!existsSync(dist)) continue;
    for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.js')) continue;
      const code = readFileSync(join(dist, file), 'utf8');
      for (const match of code.matchAll(/new URL\((['"])(\.{1,2}\/[^'"]+)\1, import\.meta\.url\)/g)) {
        const target = join(dist, file, '..', match[2] as string);
        check(existsSync(target), `${name}: dist/${file} reads ${match[2]}, which the package does not ship`);
        found++;
      }
    }
  }
  check(found > 0, 'no dist file reads a file beside it: the pattern above no longer matches the build');
  const launcher = join(project, 'node_modules', '@shears', 'envs-swe', 'assets', 'pytest-launcher.py');
  run(
    'python3',
    ['-I', '-c', 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")', launcher],
    project,
  );
});

process.stderr.write(
  `pack-check: ${Object.keys(packed).length} packages packed (${Object.values(packed)
    .map((file) => basename(file))
    .join(', ')}), installed with npm and used from ${project}\n`,
);
