#!/usr/bin/env node
// A light agent harness for tests and the concurrency bench: a small node program on the
// official openai SDK with one `shell` tool, run as `node light-harness.mjs` by the harness env.
// It knows nothing of shears but what every harness is given: base URL, key, model and task.
// LIGHT_MODE changes how it ends: `exit3` exits 3 after its answer, `hang` hangs after its first
// request (with a grandchild that hangs too), `leak` writes its base URL and key to LIGHT_LEAK_TO,
// `spawn` starts a sub-agent (a conversation of its own) before each turn of its main loop.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';

const mode = process.env.LIGHT_MODE ?? '';
const client = new OpenAI({
  baseURL: process.env.SHEARS_OPENAI_BASE_URL,
  apiKey: process.env.SHEARS_API_KEY,
  maxRetries: 0,
});
if (mode === 'leak')
  writeFileSync(
    process.env.LIGHT_LEAK_TO,
    JSON.stringify({ url: process.env.SHEARS_OPENAI_BASE_URL, key: process.env.SHEARS_API_KEY }),
  );
const tools = [
  {
    type: 'function',
    function: {
      name: 'shell',
      description: 'Run a shell command in the workspace',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];
const messages = [
  { role: 'system', content: 'You are a light agent. Use the shell tool.' },
  { role: 'user', content: process.env.SHEARS_PROMPT },
];
for (let turn = 0; turn < 10; turn++) {
  if (mode === 'spawn')
    await client.chat.completions.create({
      model: process.env.SHEARS_MODEL,
      messages: [
        { role: 'system', content: `You are sub-agent ${turn}.` },
        { role: 'user', content: process.env.SHEARS_PROMPT },
      ],
    });
  const completion = await client.chat.completions.create({
    model: process.env.SHEARS_MODEL,
    messages,
    tools,
  });
  const message = completion.choices[0].message;
  messages.push(message);
  if (mode === 'hang') {
    spawn('sh', ['-c', `sleep ${process.env.LIGHT_SLEEP ?? 3600}`], { stdio: 'ignore' });
    await new Promise(() => {});
  }
  if (!message.tool_calls?.length) {
    console.log(message.content);
    process.exit(mode === 'exit3' ? 3 : 0);
  }
  for (const call of message.tool_calls) {
    const { command } = JSON.parse(call.function.arguments);
    const result = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
    messages.push({
      role: 'tool',
      tool_call_id: call.id,
      content: `${result.stdout}${result.stderr}exit ${result.status}`,
    });
  }
}
console.log('turn limit');
process.exit(2);
