// The overhead bench's requests and scripted reply, shared by bench/overhead.ts and
// bench/dialect-cost.ts: an 8-turn coding tool loop, the history growing as a harness's does,
// in each API's own shape.
import type { Api } from './overhead-requests.js';
import type { BenchReply } from './same-api.js';

export const REPLY: BenchReply = {
  content: 'I will look at the failing test first, then read the module it imports and fix the off-by-one.',
  reasoning: 'The test fails on the boundary; read it before editing.',
  toolCalls: [
    { id: 'call_1', name: 'run_shell_command', arguments: { command: 'pytest -x tests/test_range.py' } },
  ],
  usage: { prompt_tokens: 900, completion_tokens: 60 },
};

export const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'run_shell_command',
      description: 'Run a shell command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];
export const MESSAGES = [
  { role: 'system', content: `You are a coding agent. ${'Follow the repository conventions. '.repeat(40)}` },
  { role: 'user', content: 'The range test fails; fix it.' },
];

/** Requests in one tool loop (one rollout). */
export const TURNS = 8;
const TOOL_OUTPUT = 'collected 12 items\n'.repeat(10);
const SHELL_PARAMETERS = TOOLS[0]?.function.parameters;

/** The request body of turn `turn` (0-based) of the tool loop, in `api`'s shape. */
export function bodyFor(api: Api, turn: number, stream: boolean): string {
  if (api === 'chat') {
    const messages: unknown[] = [...MESSAGES];
    for (let index = 0; index < turn; index++)
      messages.push(
        {
          role: 'assistant',
          content: REPLY.content,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: {
                name: 'run_shell_command',
                arguments: '{"command":"pytest -x tests/test_range.py"}',
              },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: TOOL_OUTPUT },
      );
    return JSON.stringify({
      model: 'm',
      messages,
      tools: TOOLS,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    });
  }
  if (api === 'responses') {
    const input: unknown[] = [{ role: 'user', content: MESSAGES[1]?.content }];
    for (let index = 0; index < turn; index++)
      input.push(
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: REPLY.content }] },
        {
          type: 'function_call',
          call_id: 'call_1',
          name: 'run_shell_command',
          arguments: '{"command":"pytest -x tests/test_range.py"}',
        },
        { type: 'function_call_output', call_id: 'call_1', output: TOOL_OUTPUT },
      );
    return JSON.stringify({
      model: 'm',
      instructions: MESSAGES[0]?.content,
      input,
      tools: [{ type: 'function', name: 'run_shell_command', parameters: SHELL_PARAMETERS }],
      stream,
      store: false,
    });
  }
  const messages: unknown[] = [{ role: 'user', content: MESSAGES[1]?.content }];
  for (let index = 0; index < turn; index++)
    messages.push(
      {
        role: 'assistant',
        content: [
          { type: 'text', text: REPLY.content },
          {
            type: 'tool_use',
            id: 'call_1',
            name: 'run_shell_command',
            input: { command: 'pytest -x tests/test_range.py' },
          },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: TOOL_OUTPUT }] },
    );
  return JSON.stringify({
    model: 'm',
    max_tokens: 1000,
    system: MESSAGES[0]?.content,
    messages,
    tools: [{ name: 'run_shell_command', input_schema: SHELL_PARAMETERS }],
    stream,
  });
}
