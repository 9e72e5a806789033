// What the model is offered and where it runs, through `shears process` with real parts (the
// demo env, local sandboxes, a scripted OpenAI-compatible HTTP server that records the tools each
// request offered, the example third-party pack shears-pack-hello loaded by path): tools added
// from plugins (`env.tools`), toolsets from the registry (also a third-party pack's), the error for
// a selection that leaves no tool, and sandbox requests a local/ssh sandbox cannot honour.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer, type ScriptedServer } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-env-tools-'));
const helloPack = fileURLToPath(new URL('../../../../examples/hello-pack', import.meta.url));
let model: ScriptedServer;
beforeAll(async () => {
  // Answers at once without a tool call: the test is about what each request offered.
  model = await createScriptedServer({ policy: () => ({ content: 'done' }) });
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

function readGroups(path: string): ScoredGroupRecord[] {
  return readFileSync(join(dir, path), 'utf8')
    .trim()
    .split('\n')
    .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
}

/** `shears process` of one demo group against the recording server; returns the tools it offered. */
async function offered(extra: string[]) {
  const before = model.chatRequests.length;
  const out = `runs/${before}.jsonl`;
  const run = await runShears(
    [
      'process',
      '--env',
      'demo',
      ...['--provider', 'openai', '--base-url', model.url, '--model', 'm'],
      ...['--groups', '1', '--group-size', '1', '--out', out, '--no-report'],
      ...extra,
    ],
    { cwd: dir },
  );
  const requests = model.chatRequests.slice(before);
  const tools = requests.map((request) => (request.tools ?? []).map((tool) => tool.function.name).sort());
  return { run, tools, out };
}

describe('env.tools and env.toolsets', () => {
  it('adds tools from installed plugins by tool id or toolset name, and offers them', async () => {
    const web = await offered(['--env.tools', '[web]', '--env.toolsets.enabled', '[web]']);
    expect(web.run.code, web.run.stderr).toBe(0);
    expect(web.tools).toEqual([['web_extract', 'web_search']]);
    expect(readGroups(web.out)[0]!.toolsets).toEqual(['web']);

    const byId = await offered([
      '--env.tools',
      '[read_file, {id: web_search, settings: {provider: searxng}}]',
    ]);
    expect(byId.run.code, byId.run.stderr).toBe(0);
    expect(byId.tools).toEqual([['read_file', 'terminal', 'web_search']]);
  });

  it('names a toolset a third-party pack declares (shears-pack-hello: greetings) in config', async () => {
    const pack = ['--plugins', helloPack];
    const added = await offered([
      ...pack,
      '--env.tools',
      '[greetings]',
      '--env.toolsets.enabled',
      '[greetings]',
    ]);
    expect(added.run.code, added.run.stderr).toBe(0);
    expect(added.tools).toEqual([['hello']]);
    expect(readGroups(added.out)[0]!.toolsets).toEqual(['greetings']);
    // The pack's own env, its tool offered through the pack's toolset, played by its demo policy.
    const run = await runShears(
      [
        'process',
        ...pack,
        ...['--env', 'hello', '--env.toolsets.enabled', '[greetings]', '--group-size', '2', '--groups', '2'],
        ...['--out', 'runs/hello.jsonl', '--no-report'],
      ],
      { cwd: dir },
    );
    expect(run.code, run.stderr).toBe(0);
    const groups = readGroups('runs/hello.jsonl');
    expect(groups.flatMap((group) => group.scores).sort()).toEqual([0, 0, 1, 1]);
    expect(groups.flatMap((group) => group.rollouts.map((rollout) => rollout.toolsets))).toEqual(
      Array(4).fill(['greetings']),
    );
  });

  it('refuses a selection that leaves the model no tool, naming what the env offers', async () => {
    const web = await offered(['--env.toolsets.enabled', '[web]']);
    expect(web.run.code).toBe(2);
    expect(web.run.stderr).toContain(
      'env.toolsets: enabled [web] leaves env demo no tool (it offers terminal (toolset terminal)); add tools from a plugin with env.tools',
    );
    expect(web.tools).toEqual([]);
    const disabled = await offered(['--env.toolsets.disabled', '[terminal]']);
    expect(disabled.run.code).toBe(2);
    expect(disabled.run.stderr).toContain('env.toolsets: disabled [terminal] leaves env demo no tool');
    // A distribution that can draw only toolsets the env lacks, in some groups.
    for (const distribution of ['minimal', 'development']) {
      const sampled = await offered(['--env.toolsets.distribution', distribution]);
      expect(sampled.run.code).toBe(2);
      expect(sampled.run.stderr).toContain(`env.toolsets.distribution: "${distribution}" can draw only`);
    }
    // One that always draws terminal is fine.
    expect((await offered(['--env.toolsets.distribution', 'terminal_only'])).run.code).toBe(0);
    expect(model.chatRequests.length).toBeGreaterThan(0);
  });

  it('names unknown tools and toolsets, clashes and contradictions', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['--env.tools', '[wbe]'],
        'env.tools[0]: no tool or toolset "wbe" in the loaded plugins (did you mean "web"?)',
      ],
      [['--env.tools', '[terminal]'], 'env.tools: env demo already offers a tool named "terminal"'],
      [['--env.tools', '[web, web_search]'], 'env.tools: tool "web_search" is added twice'],
      [
        ['--env.tools', '[{id: web_search, settings: {provider: altavista}}]'],
        'env.tools[0].settings.provider: got "altavista"; allowed: ',
      ],
      [['--env.toolsets.enabled', '[greetings]'], 'env.toolsets.enabled[0]: unknown toolset "greetings"'],
      [
        ['--env.toolsets.enabled', '[terminal]', '--env.toolsets.distribution', 'default'],
        'env.toolsets.enabled: a distribution (env.toolsets.distribution: default) picks the toolsets of each group',
      ],
      [
        ['--env.toolsets.distribution', 'defualt'],
        'unknown toolset distribution "defualt" (did you mean "default"?)',
      ],
    ];
    for (const [argv, message] of cases) {
      const { run, tools } = await offered(argv);
      expect(run.stderr, argv.join(' ')).toContain(message);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(tools).toEqual([]);
    }
  });
});

/** A plugin file (a plain manifest, no imports) with an env that asks for an image, no network and limits. */
function specPlugin(spec: Record<string, unknown>): string {
  const path = join(dir, `spec-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(
    path,
    `export default {
  specificationVersion: 'v1',
  id: 'spec-pack',
  envs: {
    boxed: {
      async create(settings, context) {
        const tool = await context.registry.create('tools', 'terminal', {});
        let n = 0;
        return {
          specificationVersion: 'v1',
          id: 'boxed',
          async nextItem() { n++; return { id: 'task-' + n, prompt: 'say done' }; },
          buildMessages(item) { return [{ role: 'user', content: item.prompt }]; },
          tools() { return [tool]; },
          sandboxSpec() { return ${JSON.stringify(spec)}; },
          async computeReward() { return { score: 1 }; },
        };
      },
    },
  },
};
`,
  );
  return path;
}

describe('sandbox requests a local or ssh sandbox cannot honour', () => {
  const run = (plugin: string, extra: string[], groups = '1') =>
    runShears(
      [
        'process',
        ...['--plugins', plugin, '--env', 'boxed', '--groups', groups, '--group-size', '1'],
        ...['--out', `runs/boxed-${Math.random().toString(36).slice(2)}.jsonl`, '--no-report'],
        ...['--provider', 'openai', '--base-url', model.url, '--model', 'm'],
        ...extra,
      ],
      { cwd: dir },
    );

  it("refuses an env's container image and `network: none`, before any sandbox starts", async () => {
    const image = specPlugin({ image: 'shears-swe-task:abc' });
    const noNetwork = specPlugin({ network: 'none' });
    const ssh = ['--sandbox', 'ssh', '--sandbox.settings', '{host: 127.0.0.1, port: 1, username: nobody}'];
    for (const [plugin, extra, message] of [
      [
        image,
        ['--sandbox', 'local'],
        'env boxed runs its tasks in the container image "shears-swe-task:abc", but the local sandbox',
      ],
      [
        image,
        ssh,
        'env boxed runs its tasks in the container image "shears-swe-task:abc", but the ssh sandbox',
      ],
      [noNetwork, [], 'env boxed asks for a sandbox without network, but the local sandbox'],
      [noNetwork, ssh, 'env boxed asks for a sandbox without network, but the ssh sandbox'],
    ] as const) {
      const before = model.chatRequests.length;
      const result = await run(plugin, [...extra]);
      expect(result.stderr).toContain(`sandbox.provider: ${message}`);
      expect(result.stderr).toContain('use sandbox.provider: docker');
      expect(result.code).toBe(2);
      expect(model.chatRequests.length).toBe(before);
    }
  });

  it('warns once about resource limits the local sandbox does not enforce, and runs', async () => {
    const limited = specPlugin({ limits: { memoryMb: 512, cpus: 1 } });
    const result = await run(limited, [], '2');
    expect(result.code, result.stderr).toBe(0);
    const warnings = result.stderr.match(
      /asks for resource limits \(memoryMb 512, cpus 1\) that the local sandbox does not enforce/g,
    );
    expect(warnings).toHaveLength(1);
  });

  it('refuses sandbox.image and provider settings local/ssh do not have, naming the field', async () => {
    const image = await runShears(['process', '--env', 'demo', '--sandbox.image', 'busybox'], { cwd: dir });
    expect(image.code).toBe(2);
    expect(image.stderr).toContain('sandbox.image: the local sandbox runs no container image');
    for (const [setting, value] of [
      ['limits', '{memoryMb: 100}'],
      ['network', 'none'],
      ['image', 'busybox'],
    ]) {
      const result = await runShears(['process', '--env', 'demo', `--sandbox.settings.${setting}`, value!], {
        cwd: dir,
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`sandbox.settings.${setting}: unknown setting`);
      expect(result.stderr).toContain('allowed: root, inheritEnv, env, maxOutputBytes');
    }
  });
});
