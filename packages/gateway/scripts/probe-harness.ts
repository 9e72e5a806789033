// Manual probe (not a test): runs one real agent CLI against the gateway, in front of the phase-2
// scripted /generate server (real Qwen3 tokenizer and template, hermes parser), on the task
// "Create hello.txt containing hi", and prints what the gateway recorded. This is how the
// findings in docs/harness-requests.md were made.
//
//   npm install --prefix /tmp/harnesses @qwen-code/qwen-code opencode-ai @anthropic-ai/claude-code @openai/codex
//   HARNESS_BIN=/tmp/harnesses/node_modules/.bin \
//     node --import tsx --conditions=@shears/source scripts/probe-harness.ts qwen|opencode|claude|codex
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway } from '../src/index.js';
import { managedBackend, toolCallText } from '../test/backends.js';

const SHELL_TOOLS: Record<string, { tool: string; args: (command: string) => Record<string, unknown> }> = {
  qwen: { tool: 'run_shell_command', args: (command) => ({ command, description: 'write file' }) },
  opencode: { tool: 'bash', args: (command) => ({ command, description: 'Write file' }) },
  claude: { tool: 'Bash', args: (command) => ({ command, description: 'Write file' }) },
  codex: { tool: 'exec_command', args: (cmd) => ({ cmd }) },
};

const which = process.argv[2] ?? '';
const spec = SHELL_TOOLS[which];
const bin = process.env.HARNESS_BIN;
if (!spec || !bin) {
  console.error(
    `usage: HARNESS_BIN=<folder with the CLIs> probe-harness.ts ${Object.keys(SHELL_TOOLS).join('|')}`,
  );
  process.exit(2);
}

const backend = await managedBackend({
  policy: (request) => {
    // Side calls (titles, memory) do not offer the shell tool: answer them with plain text.
    if (!request.promptText.includes(`"name": "${spec.tool}"`)) return 'Write hello file';
    if (!request.promptText.includes('<tool_response>'))
      return `<think>\nI will write the file with the shell.\n</think>\n\n${toolCallText(spec.tool, spec.args('echo hi > hello.txt'))}`;
    return '<think>\nThe file is written.\n</think>\n\nDone: hello.txt contains hi.';
  },
});
const gateway = await createGateway({ server: backend.server });
const session = gateway.openSession({ rolloutId: which, model: 'qwen3-policy' });
const root = mkdtempSync(join(tmpdir(), `shears-probe-${which}-`));
const home = join(root, 'home');
const work = join(root, 'work');
mkdirSync(home, { recursive: true });
mkdirSync(work, { recursive: true });
const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: home, TERM: 'dumb' };
const task = 'Create hello.txt containing hi';
let command: string[];
if (which === 'qwen') {
  Object.assign(env, {
    OPENAI_BASE_URL: session.openaiBaseUrl,
    OPENAI_API_KEY: session.apiKey,
    OPENAI_MODEL: session.model,
  });
  mkdirSync(join(home, '.qwen'), { recursive: true });
  writeFileSync(
    join(home, '.qwen/settings.json'),
    JSON.stringify({
      telemetry: { enabled: false },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true },
    }),
  );
  command = [join(bin, 'qwen'), '-p', task, '--auth-type', 'openai', '--yolo'];
} else if (which === 'opencode') {
  writeFileSync(
    join(work, 'opencode.json'),
    JSON.stringify({
      provider: {
        shears: {
          npm: '@ai-sdk/openai-compatible',
          name: 'shears',
          options: { baseURL: session.openaiBaseUrl, apiKey: session.apiKey },
          models: { [session.model]: { name: 'policy' } },
        },
      },
      model: `shears/${session.model}`,
      autoupdate: false,
      share: 'disabled',
      permission: { bash: 'allow', edit: 'allow' },
    }),
  );
  Object.assign(env, { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' });
  command = [join(bin, 'opencode'), 'run', task];
} else if (which === 'claude') {
  Object.assign(env, {
    ANTHROPIC_BASE_URL: session.baseUrl,
    ANTHROPIC_API_KEY: session.apiKey,
    ANTHROPIC_MODEL: session.model,
    ANTHROPIC_SMALL_FAST_MODEL: session.model,
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // As root, --dangerously-skip-permissions is refused unless the CLI is told it is sandboxed.
    IS_SANDBOX: '1',
  });
  command = [join(bin, 'claude'), '-p', task, '--model', session.model, '--dangerously-skip-permissions'];
} else {
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(
    join(home, '.codex/config.toml'),
    [
      `model = "${session.model}"`,
      'model_provider = "shears"',
      'check_for_update_on_startup = false',
      '[analytics]',
      'enabled = false',
      '[model_providers.shears]',
      'name = "shears"',
      `base_url = "${session.openaiBaseUrl}"`,
      'env_key = "SHEARS_API_KEY"',
      'wire_api = "responses"',
      '',
    ].join('\n'),
  );
  Object.assign(env, { CODEX_HOME: join(home, '.codex'), SHEARS_API_KEY: session.apiKey });
  command = [
    join(bin, 'codex'),
    'exec',
    '--skip-git-repo-check',
    '--dangerously-bypass-approvals-and-sandbox',
    task,
  ];
}

const [program, ...args] = command;
const child = spawn(program as string, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
let output = '';
child.stdout.on('data', (chunk) => (output += chunk));
child.stderr.on('data', (chunk) => (output += chunk));
const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
const exitCode = await new Promise((resolve) => child.on('close', resolve));
clearTimeout(timer);
const record = await session.close();
console.log(`exit ${String(exitCode)}\n--- harness output (tail) ---\n${output.slice(-1500)}`);
const file = join(work, 'hello.txt');
console.log('hello.txt:', existsSync(file) ? JSON.stringify(readFileSync(file, 'utf8')) : 'MISSING');
for (const request of record.requests)
  console.log(
    'request',
    request.index,
    request.api,
    request.stream,
    request.status,
    request.httpStatus,
    request.threadId,
    `ignored=${request.ignoredFields.join(',')}`,
    `restored=${request.restoredMessages}`,
  );
for (const thread of record.threads)
  console.log(
    'thread',
    thread.id,
    thread.requestIndices,
    JSON.stringify(thread.systemPreview.slice(0, 80)),
    `splits=${thread.tokens?.splits}`,
    thread.messages.map((message) => message.role).join(','),
  );
writeFileSync(join(root, 'record.json'), JSON.stringify(record, null, 1));
console.log('record:', join(root, 'record.json'));
await gateway.close();
await backend.close();
