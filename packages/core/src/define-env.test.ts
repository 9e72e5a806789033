// defineEnv and tool(): the "count the words" env (rows, one typed tool, files placed in the
// sandbox, a reward that reads the sandbox) runs a whole group against the scripted server in
// temp-directory sandboxes; rows come from lists, files and iterables; mistakes are refused with
// messages naming what is wrong.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EnvV1 } from './contracts/env.js';
import { defineEnv, type EnvRow, tool } from './define-env.js';
import { runGroup } from './group-runner.js';
import { createRegistry, definePlugin, type Registry } from './registry.js';
import { createScriptedServer, type ScriptedPolicy } from './test/scripted-server.js';
import { createScriptedServerClient } from './test/scripted-server-client.js';
import { createTempSandboxProvider } from './test/temp-sandbox-provider.js';

const provider = createTempSandboxProvider();
const dir = mkdtempSync(join(tmpdir(), 'shears-define-env-'));
afterAll(async () => {
  await provider.close();
  rmSync(dir, { recursive: true, force: true });
});

const countWords = tool({
  name: 'count_words',
  description: 'Count the words in a file of the workspace',
  parameters: z.object({ path: z.string().describe('The file to read') }),
  async run({ path }, { sandbox }) {
    const text = new TextDecoder().decode(await sandbox.readFile(path));
    if (text.includes('BOOM')) throw new Error(`cannot count ${path}: it explodes`);
    return text.split(/\s+/).filter(Boolean).length;
  },
});

/** A tool `write_answer` from another plugin, standing in for a built-in found by name. */
const builtins = definePlugin({
  id: 'answers-plugin',
  tools: {
    write_answer: {
      create: () =>
        tool({
          name: 'write_answer',
          description: 'Write the answer into answer.txt',
          parameters: z.object({ value: z.string() }),
          async run({ value }, { sandbox }) {
            await sandbox.writeFile('answer.txt', value);
            return 'written';
          },
        }),
    },
  },
});

function countWordsEnv(tasks: unknown = [{ id: 'fox', text: 'the quick brown fox' }]) {
  return defineEnv<{ text: string }>({
    name: 'count-words',
    tasks: tasks as { text: string }[],
    prompt: 'Count the words of data/input.txt ("{text}") and write the number with write_answer.',
    files: (row) => ({ 'data/input.txt': row.text, 'data/bytes.bin': new Uint8Array([0, 255, 10]) }),
    tools: ['write_answer', countWords],
    async reward(row, { read }) {
      const bytes = await read('data/bytes.bin');
      if (bytes === undefined) throw new Error('the binary file was not placed');
      return (await read('answer.txt'))?.trim() === String(row.text.split(/\s+/).length);
    },
  });
}

async function createEnv(pack: ReturnType<typeof defineEnv>, settings = {}): Promise<EnvV1> {
  const registry: Registry = createRegistry().use(builtins).use(pack);
  return (await registry.create('envs', pack.env, settings)) as EnvV1;
}

/** Counts with the tool, then writes its result (the first rollout of a task) or one more. */
function countingPolicy(): ScriptedPolicy {
  const rollouts = new Map<string, number>();
  return (request) => {
    const toolMessages = request.messages.filter((message) => message.role === 'tool');
    if (toolMessages.length === 0) {
      return { toolCalls: [{ name: 'count_words', arguments: { path: 'data/input.txt' } }] };
    }
    if (toolMessages.length === 1) {
      const key = String(request.messages.find((message) => message.role === 'user')?.content);
      const attempt = rollouts.get(key) ?? 0;
      rollouts.set(key, attempt + 1);
      const count = Number(toolMessages[0]!.content);
      return {
        toolCalls: [
          { name: 'write_answer', arguments: { value: String(attempt === 0 ? count : count + 1) } },
        ],
      };
    }
    return { content: 'done' };
  };
}

async function playGroup(env: EnvV1, policy: ScriptedPolicy, groupSize = 2) {
  const server = await createScriptedServer({ policy, concurrency: 1 } as Parameters<
    typeof createScriptedServer
  >[0]);
  try {
    return await runGroup({
      env,
      item: (await env.nextItem())!,
      server: createScriptedServerClient({ baseUrl: server.url, model: 'scripted' }),
      sandboxes: provider,
      groupSize,
    });
  } finally {
    await server.close();
  }
}

describe('defineEnv: the count-the-words env', () => {
  it('places the files, offers the built-in and the own tool, and rewards what is in the sandbox', async () => {
    const env = await createEnv(countWordsEnv());
    const item = (await env.nextItem())!;
    expect(item.prompt).toBe(
      'Count the words of data/input.txt ("the quick brown fox") and write the number with write_answer.',
    );
    expect(env.tools(item).map((one) => one.name)).toEqual(['write_answer', 'count_words']);
    const record = await playGroup(env, countingPolicy());
    expect([...record.scores].sort()).toEqual([0, 1]);
    expect(provider.liveCount).toBe(0);
  });

  it('derives the JSON Schema from zod, refuses bad arguments before run, and shows a throw to the model', async () => {
    const seen: string[] = [];
    const env = await createEnv(countWordsEnv([{ text: 'BOOM goes the file' }]));
    const record = await playGroup(
      env,
      (request) => {
        const tools = request.tools?.map((one) => one.function) ?? [];
        const schema = tools.find((one) => one.name === 'count_words')?.parameters as {
          properties: Record<string, { type: string; description?: string }>;
          required: string[];
        };
        expect(schema.properties.path).toMatchObject({ type: 'string', description: 'The file to read' });
        expect(schema.required).toEqual(['path']);
        const toolMessages = request.messages.filter((message) => message.role === 'tool');
        seen.push(...toolMessages.slice(seen.length).map((message) => String(message.content)));
        if (toolMessages.length === 0)
          return { toolCalls: [{ name: 'count_words', arguments: { path: 7 } }] };
        if (toolMessages.length === 1)
          return { toolCalls: [{ name: 'count_words', arguments: { path: 'data/input.txt' } }] };
        return { content: 'giving up' };
      },
      1,
    );
    expect(seen[0]).toMatch(/path/);
    expect(seen[0]).toMatch(/string/);
    expect(seen[1]).toContain('cannot count data/input.txt: it explodes');
    // No answer.txt: the reward reads undefined and scores 0 (not a failed rollout).
    expect(record.scores).toEqual([0]);
  });

  it('turns a reward that returns nothing usable into a failed rollout naming the env and task', async () => {
    const pack = defineEnv({
      name: 'bad-reward',
      tasks: [{ id: 'only' }],
      prompt: 'Say hi.',
      reward: () => 'yes',
    });
    const env = await createEnv(pack);
    const record = await playGroup(env, () => ({ content: 'hi' }), 1);
    const trajectory = record.rollouts[0]!;
    expect(record.scores).toEqual([null]);
    expect(trajectory.outcome).toBe('env_error');
    expect(trajectory.outcomeReason).toContain('env "bad-reward", task "only": the reward returned "yes"');
  });
});

describe('defineEnv: tasks are rows', () => {
  const prompts = async (pack: ReturnType<typeof defineEnv>, settings = {}) =>
    (await (await createEnv(pack, settings)).evalItems!()).map((item) => [item.id, item.prompt]);
  const rowsEnv = (tasks: unknown) =>
    defineEnv<EnvRow>({ name: 'rows', tasks: tasks as EnvRow[], prompt: 'Count {text}', reward: () => 1 });

  it('reads JSONL, JSON and CSV files, async iterables, and the tasks setting (--tasks FILE)', async () => {
    writeFileSync(join(dir, 'rows.jsonl'), '{"id":"a","text":"one two"}\n\n{"text":"three"}\n');
    writeFileSync(join(dir, 'rows.json'), JSON.stringify([{ text: 'x y z' }]));
    writeFileSync(join(dir, 'rows.csv'), 'id,text\nc1,"a, b"\nc2,plain\n');
    expect(await prompts(rowsEnv(join(dir, 'rows.jsonl')))).toEqual([
      ['a', 'Count one two'],
      ['rows-2', 'Count three'],
    ]);
    expect(await prompts(rowsEnv(new URL(`file://${join(dir, 'rows.json')}`)))).toEqual([
      ['rows-1', 'Count x y z'],
    ]);
    expect(await prompts(rowsEnv(join(dir, 'rows.csv')))).toEqual([
      ['c1', 'Count a, b'],
      ['c2', 'Count plain'],
    ]);
    async function* generate() {
      yield { text: 'streamed' };
    }
    expect(await prompts(rowsEnv(generate()))).toEqual([['rows-1', 'Count streamed']]);
    expect(await prompts(rowsEnv([{ text: 'unused' }]), { tasks: join(dir, 'rows.json') })).toEqual([
      ['rows-1', 'Count x y z'],
    ]);
  });

  it('gives each row to the system template, the set-up commands, the files and the turn budget', async () => {
    const env = await createEnv(
      defineEnv<{ id: string; level: number; text: string }>({
        name: 'rows-everywhere',
        tasks: [{ id: 'r1', level: 3, text: 'abc' }],
        system: 'Level {level}.',
        prompt: (row) => `Read ${row.text}.`,
        files: (row) => ({ [`${row.id}.txt`]: row.text }),
        setup: (row) => [`cp ${row.id}.txt copy.txt`],
        maxTurns: 3,
        reward: () => 1,
      }),
    );
    const item = (await env.nextItem())!;
    expect(env.buildMessages(item)).toEqual([
      { role: 'system', content: 'Level 3.' },
      { role: 'user', content: 'Read abc.' },
    ]);
    expect(env.budget?.(item)).toEqual({ maxTurns: 3 });
    const spec = env.sandboxSpec!(item);
    const sandbox = await provider.acquire(spec);
    try {
      expect(new TextDecoder().decode(await sandbox.readFile('copy.txt'))).toBe('abc');
    } finally {
      await sandbox.dispose();
    }
  });

  it('starts at the row the seed names and cycles', async () => {
    const env = await createEnv(rowsEnv([{ text: 'a' }, { text: 'b' }, { text: 'c' }]), { seed: 1 });
    const ids = [];
    for (let index = 0; index < 4; index++) ids.push((await env.nextItem())!.prompt);
    expect(ids).toEqual(['Count b', 'Count c', 'Count a', 'Count b']);
  });

  it('refuses formats, files and rows it cannot use, naming what is wrong', async () => {
    await expect(createEnv(rowsEnv(join(dir, 'rows.parquet')))).rejects.toThrow(
      /tasks file .*rows\.parquet: cannot read "\.parquet" files; give a \.jsonl, \.json or \.csv file/,
    );
    await expect(createEnv(rowsEnv('missing.jsonl'))).rejects.toThrow(
      /cannot read tasks file missing\.jsonl \(\/.*\/missing\.jsonl\): no such file/,
    );
    await expect(createEnv(rowsEnv([{ txt: 'typo' }]))).rejects.toThrow(
      'env "rows", task "rows-1", prompt: the template names {text}, which the row does not have (its fields: txt)',
    );
    await expect(
      createEnv(
        rowsEnv([
          { id: 1, text: 'a' },
          { id: '1', text: 'b' },
        ]),
      ),
    ).rejects.toThrow('two task rows have the id "1"');
    await expect(createEnv(rowsEnv([]))).rejects.toThrow('no tasks');
    await expect(createEnv(rowsEnv(42))).rejects.toThrow(/tasks must be a list of rows, .* got number/);
    writeFileSync(join(dir, 'broken.jsonl'), '{"text":"ok"}\n{"text":\n');
    await expect(createEnv(rowsEnv(join(dir, 'broken.jsonl')))).rejects.toThrow(/broken\.jsonl line 2/);
  });
});

describe('defineEnv and tool(): mistakes are refused', () => {
  it('refuses a tool of its own with a built-in name, naming both', async () => {
    const clash = tool({
      name: 'write_answer',
      description: 'Mine',
      parameters: z.object({}),
      run: () => 'x',
    });
    const pack = defineEnv({ name: 'clash', tasks: [{}], prompt: 'p', tools: [clash], reward: () => 0 });
    await expect(createEnv(pack)).rejects.toThrow(
      'env "clash": its own tool "write_answer" has the name of the built-in tool "write_answer" (plugin "answers-plugin")',
    );
    const twice = defineEnv({
      name: 'twice',
      tasks: [{}],
      prompt: 'p',
      tools: [countWords, countWords],
      reward: () => 0,
    });
    await expect(createEnv(twice)).rejects.toThrow(
      'env "twice": two tools are named "count_words": the env\'s own tool "count_words" and the env\'s own tool "count_words"',
    );
    const unknown = defineEnv({
      name: 'unknown',
      tasks: [{}],
      prompt: 'p',
      tools: ['termnal'],
      reward: () => 0,
    });
    await expect(createEnv(unknown)).rejects.toThrow(
      /tools\[0\]: no built-in tool "termnal" \(available: write_answer/,
    );
  });

  it('refuses a misspelt field, a tool without a zod object, and unknown env settings', async () => {
    expect(() =>
      defineEnv({ name: 'typo', tasks: [], prompt: 'p', reward: () => 0, rewards: () => 0 } as never),
    ).toThrow(/env "typo": unknown field "rewards" \(fields: name, description, tasks/);
    expect(() =>
      tool({ name: 'bad', description: 'd', parameters: { path: 'string' } as never, run: () => '' }),
    ).toThrow('tool "bad": parameters must be a zod object schema');
    await expect(createEnv(countWordsEnv(), { file: 'x.jsonl' })).rejects.toThrow(/env\.settings\.tasks/);
  });
});
