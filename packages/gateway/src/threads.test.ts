import type { ChatMessage, ToolSchema } from '@shears/core';
import { describe, expect, it } from 'vitest';
import {
  argumentShapes,
  canonicalArguments,
  matchThread,
  messageKey,
  type ThreadState,
  threadTags,
} from './threads.js';

const assistant = (content: string | null, args?: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({
  role: 'assistant',
  content,
  ...(args !== undefined
    ? { tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run', arguments: args } }] }
    : {}),
  ...extra,
});

function thread(
  id: string,
  messages: ChatMessage[],
  options: { busy?: boolean; lastUsed?: number; api?: 'chat.completions' | 'messages' } = {},
): ThreadState {
  return {
    id,
    tags: threadTags(options.api ?? 'chat.completions', messages, undefined, null),
    keys: messages.map((message) => messageKey(message)),
    messages,
    produced: new Set(),
    tools: undefined,
    requestIndices: [],
    busy: options.busy ?? false,
    lastUsed: options.lastUsed ?? 0,
    managed: undefined,
  };
}

describe('messageKey', () => {
  it('treats an echoed reply as the same message when only ids, reasoning, spacing or key order differ', () => {
    const produced = assistant(' Reading. ', '{"cmd": "ls", "flags": ["-l"]}', {
      reasoning_content: 'think',
    });
    const echoed: ChatMessage = {
      role: 'assistant',
      content: 'Reading.',
      tool_calls: [
        {
          id: 'toolu_other',
          type: 'function',
          function: { name: 'run', arguments: '{"flags":["-l"],"cmd":"ls"}' },
        },
      ],
    };
    expect(messageKey(echoed)).toBe(messageKey(produced));
  });

  it('tells apart messages a harness really changed', () => {
    const base = assistant('Reading.', '{"cmd": "ls"}');
    expect(messageKey(assistant('Reading!', '{"cmd": "ls"}'))).not.toBe(messageKey(base));
    expect(messageKey(assistant('Reading.', '{"cmd": "ls -a"}'))).not.toBe(messageKey(base));
    expect(messageKey({ role: 'user', content: 'hi' })).not.toBe(
      messageKey({ role: 'user', content: 'hi ' }),
    );
    expect(messageKey({ role: 'user', content: 'x' })).not.toBe(messageKey({ role: 'system', content: 'x' }));
    expect(messageKey({ role: 'tool', tool_call_id: 'a', content: 'out' })).not.toBe(
      messageKey({ role: 'tool', tool_call_id: 'a', content: 'out2' }),
    );
    // Where the role, the tool calls and the text meet cannot be shifted to forge a match, for
    // short keys (kept as text) and long ones (hashed) alike.
    for (const tail of ['', ' and a long tail that makes the identity long enough to be hashed'])
      expect(messageKey({ role: 'user', content: `"user"x${tail}` })).not.toBe(
        messageKey({ role: 'user"', content: `"user"x${tail}`.slice(6) }),
      );
    expect(messageKey(assistant('[["run","{}"]]'))).not.toBe(messageKey(assistant('', '{}')));
    expect(messageKey(assistant('ok'))).not.toBe(messageKey(assistant('ok', '{}')));
    const long = 'a'.repeat(100);
    expect(messageKey({ role: 'user', content: long })).toBe(messageKey({ role: 'user', content: long }));
    expect(messageKey({ role: 'user', content: long })).not.toBe(
      messageKey({ role: 'user', content: `${long}b` }),
    );
  });

  it('canonicalises JSON arguments and keeps text that is not JSON', () => {
    expect(canonicalArguments('{"b": 1, "a": {"d": [1, 2], "c": null}}')).toBe(
      '{"a":{"c":null,"d":[1,2]},"b":1}',
    );
    expect(canonicalArguments('  not json ')).toBe('not json');
  });

  it('gives the same answer for a text seen before (remembered), and never gives one text the answer of another', () => {
    const texts = [
      '{"b": 1, "a": 2}',
      '{"a":2,"b":1}',
      '{"a": 2, "b": 3}',
      ' {"a": 2} x',
      `{"big": "${'y'.repeat(5000)}"}`,
    ];
    const first = texts.map((text) => canonicalArguments(text));
    expect(first).toEqual([
      '{"a":2,"b":1}',
      '{"a":2,"b":1}',
      '{"a":2,"b":3}',
      '{"a": 2} x',
      `{"big":"${'y'.repeat(5000)}"}`,
    ]);
    for (let round = 0; round < 3; round++)
      expect(texts.map((text) => canonicalArguments(text))).toEqual(first);
    // Past the cache's size it starts over, with the same answers.
    for (let index = 0; index < 5000; index++) canonicalArguments(`{"i": ${index}}`);
    expect(canonicalArguments('{"i": 4999}')).toBe('{"i":4999}');
    expect(texts.map((text) => canonicalArguments(text))).toEqual(first);
  });

  it('keeps the identity of a call echoed as its harness validated it (defaults filled in, undeclared keys dropped), and only then', () => {
    const tool = (name: string, parameters: Record<string, unknown>): ToolSchema => ({
      type: 'function',
      function: { name, parameters: { type: 'object', ...parameters } },
    });
    const tools = [
      // Claude Code's Edit: zod's JSON Schema, closed, one declared default.
      tool('Edit', {
        properties: {
          file_path: { type: 'string' },
          replace_all: { type: 'boolean', default: false },
          options: {
            type: 'object',
            properties: { depth: { type: 'integer', default: 1 }, mode: { type: 'string' } },
          },
          edits: {
            type: 'array',
            items: { type: 'object', properties: { line: { type: 'integer' } }, additionalProperties: false },
          },
        },
        additionalProperties: false,
      }),
      tool('Bash', { properties: { command: { type: 'string' } } }),
      tool('Open', { properties: { path: { type: 'string' } }, additionalProperties: true }),
    ];
    const shapes = argumentShapes(tools);
    expect([...(shapes?.keys() ?? [])]).toEqual(['Edit']);
    expect(argumentShapes([tools[1]!, tools[2]!])).toBeUndefined();
    expect(argumentShapes(undefined)).toBeUndefined();

    const call = (name: string, args: string): ChatMessage => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c', type: 'function', function: { name, arguments: args } }],
    });
    const key = (name: string, args: string, withShapes = true) =>
      messageKey(call(name, args), withShapes ? shapes : undefined);
    const written = key('Edit', '{"file_path": "/w/a.sh", "options": {"mode": "x"}, "edits": [{"line": 3}]}');
    // Validated echoes: defaults filled in at any depth, in any key order and spelling.
    expect(
      key(
        'Edit',
        '{"replace_all":false,"edits":[{"line":3}],"options":{"depth":1,"mode":"x"},"file_path":"/w/a.sh"}',
      ),
    ).toBe(written);
    // The model wrote keys the closed schemas do not declare; the harness stripped them.
    expect(key('Edit', '{"file_path":"/w/a.sh","options":{"mode":"x"},"edits":[{"line":3}]}')).toBe(
      key('Edit', '{"file_path":"/w/a.sh","extra":1,"options":{"mode":"x"},"edits":[{"line":3,"note":"n"}]}'),
    );
    // Another value, a changed nested value, another tool, or no shapes: another call.
    expect(
      key('Edit', '{"replace_all":true,"file_path":"/w/a.sh","options":{"mode":"x"},"edits":[{"line":3}]}'),
    ).not.toBe(written);
    expect(
      key('Edit', '{"file_path":"/w/a.sh","options":{"mode":"x","depth":2},"edits":[{"line":3}]}'),
    ).not.toBe(written);
    expect(key('Edit', '{"file_path":"/w/a.sh","options":{"mode":"y"},"edits":[{"line":3}]}')).not.toBe(
      written,
    );
    expect(key('Edit', '{"file_path":"/w/a.sh","options":{"mode":"x"},"edits":[{"line":4}]}')).not.toBe(
      written,
    );
    // Open objects keep undeclared keys: the tool receives them.
    expect(
      key('Edit', '{"file_path":"/w/a.sh","options":{"mode":"x","extra":1},"edits":[{"line":3}]}'),
    ).not.toBe(written);
    expect(key('Bash', '{"command":"ls","replace_all":false}')).not.toBe(key('Bash', '{"command":"ls"}'));
    expect(key('Edit', '{"replace_all":false,"file_path":"/w/a.sh"}', false)).not.toBe(
      key('Edit', '{"file_path":"/w/a.sh"}', false),
    );
    // A key named like an Object member is a plain key; non-object arguments stay as they are.
    expect(key('Edit', '{"file_path":"/w/a.sh","__proto__":{"x":1},"constructor":2}')).toBe(
      key('Edit', '{"file_path":"/w/a.sh"}'),
    );
    expect(key('Edit', '"just text"')).toBe(key('Edit', '"just text"', false));
    // The remembered spellings with and without a shape never answer for each other.
    const edit = shapes?.get('Edit');
    expect(canonicalArguments('{"replace_all":false,"file_path":"x"}')).toBe(
      '{"file_path":"x","replace_all":false}',
    );
    expect(canonicalArguments('{"replace_all":false,"file_path":"x"}', edit)).toBe('{"file_path":"x"}');
    expect(canonicalArguments('{"replace_all":false,"file_path":"x"}')).toBe(
      '{"file_path":"x","replace_all":false}',
    );
  });
});

describe('matchThread', () => {
  const system: ChatMessage = { role: 'system', content: 'You are an agent.' };
  const user: ChatMessage = { role: 'user', content: 'Fix it' };
  const reply = assistant(null, '{"cmd": "ls"}');
  const tool: ChatMessage = { role: 'tool', tool_call_id: 'call_1', content: 'a.ts' };

  it('joins the thread whose conversation the request extends, preferring the longest', () => {
    const short = thread('t0', [system, user]);
    const long = thread('t1', [system, user, reply]);
    const keys = [system, user, reply, tool].map((message) => messageKey(message));
    expect(matchThread([short, long], 'chat.completions', keys, 1).thread?.id).toBe('t1');
  });

  it('never joins a busy thread: the request branches from it', () => {
    const busy = thread('t0', [system, user, reply], { busy: true });
    const match = matchThread(
      [busy],
      'chat.completions',
      [system, user, reply, tool].map((message) => messageKey(message)),
      1,
    );
    expect(match.thread).toBeUndefined();
    expect(match.branchOf?.id).toBe('t0');
  });

  it('starts a new thread for another system prompt or another API, and names a shared opening as a branch', () => {
    const main = thread('t0', [system, user, reply]);
    const title = [{ role: 'system', content: 'Generate a title.' }, user].map((message) =>
      messageKey(message),
    );
    expect(matchThread([main], 'chat.completions', title, 1)).toEqual({
      thread: undefined,
      branchOf: undefined,
    });
    expect(
      matchThread(
        [main],
        'messages',
        [system, user, reply, tool].map((message) => messageKey(message)),
        1,
      ).thread,
    ).toBeUndefined();
    // Same system and user, different continuation (a retry from an earlier point).
    const retry = [system, user, assistant('Something else')].map((message) => messageKey(message));
    expect(matchThread([main], 'chat.completions', retry, 1)).toEqual({ thread: undefined, branchOf: main });
  });

  it('tags a thread with its system hash, previews and tools', () => {
    const tags = threadTags(
      'responses',
      [system, { role: 'system', content: 'More rules.' }, user],
      [{ type: 'function', function: { name: 'run' } }],
      null,
    );
    expect(tags).toMatchObject({
      api: 'responses',
      systemPreview: 'You are an agent.\nMore rules.',
      firstUserMessage: 'Fix it',
      toolNames: ['run'],
      branchOf: null,
    });
    expect(tags.systemHash).toMatch(/^[0-9a-f]{16}$/);
    expect(threadTags('responses', [user], undefined, null).systemHash).toBe('');
  });
});
