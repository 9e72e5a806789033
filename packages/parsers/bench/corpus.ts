// A benchmark corpus written the way models write tool calls, not rendered by shears: each output
// is assembled here by hand from the format's documented shape, with the variation real outputs
// show (key order, compact / Python-style / pretty JSON, \u escapes and escaped slashes, prose or a
// <think> block before the calls, end-of-turn tokens, missing optional wrappers). Every output
// records how many calls it holds, so the bench also checks that the parsers read it all.
import type { ToolSchema } from '@shears/core';
import { createSeededRandom } from '@shears/core/scripted';

export interface CorpusOutput {
  text: string;
  calls: number;
  /** The calls written, in order (arguments as the JSON value meant). */
  expected: Call[];
}

export interface Corpus {
  format: string;
  outputs: CorpusOutput[];
  /** Offered tools (the XML formats type their values by these). */
  tools: ToolSchema[];
}

type Random = () => number;
const pick = <T>(random: Random, list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
const chance = (random: Random, p: number): boolean => random() < p;

const PROSE = [
  'Let me look at the failing test first.',
  "I'll check the configuration file before changing anything.",
  'The error mentions a missing import; searching for it.',
  'Voy a revisar el archivo de configuración.',
  'Je vais lire le fichier pour comprendre le problème — une seconde.',
  '我先看一下这个函数的实现。',
  'まずテストを実行して、どこで失敗するか確認します。',
  'Checking the weather in Zürich and São Paulo for you.',
  'Running the linter to see what changed.',
  'The build failed with exit code 2; let me inspect the log.',
];
const THOUGHTS = [
  'The user wants the test fixed. The traceback points at parse_config, which reads a YAML file.',
  'I should not guess the path; list the directory first, then open the module.',
  'Two calls can run in parallel here: read the file and run the tests.',
];
const PATHS = [
  'src/app.py',
  'src/utils/config.ts',
  'tests/test_parser.py',
  'README.md',
  'docs/guide/été.md',
  'lib/核心.rs',
];
const COMMANDS = [
  'pytest -x tests/test_parser.py -k "empty and not slow"',
  "grep -rn 'TODO' src/ | head -20",
  'npm run build && npm test -- --reporter=dot',
  'git diff HEAD~1 -- src/app.py',
  'find . -name "*.py" -newer setup.py -print',
  'python -c \'import json; print(json.dumps({"a": [1, 2]}))\'',
];
const CODE = [
  'def parse(text):\n    """Split on blank lines."""\n    return [block.strip() for block in text.split("\\n\\n") if block]\n',
  'export function add(a: number, b: number): number {\n  return a + b;\n}\n',
  'if (x < 10 && y > 2) {\n    printf("%d {braces} \\"quoted\\"\\n", x);\n}\n',
  '    for key, value in sorted(config.items()):\n        print(f"{key}={value!r}")\n',
  '<div class="note">Price: 5 € — “quoted”</div>\n',
  "SELECT name, count(*) FROM users WHERE email LIKE '%@example.com' GROUP BY name;\n",
];
const CITIES = ['Paris', 'Zürich', 'São Paulo', '東京', 'Москва', 'New York'];

export interface Call {
  name: string;
  args: Record<string, unknown>;
}

/** One call of a coding/assistant agent, with realistic argument values. */
function makeCall(random: Random): Call {
  const kind = Math.floor(random() * 6);
  if (kind === 0)
    return { name: 'read_file', args: { path: pick(random, PATHS), limit: 1 + Math.floor(random() * 400) } };
  if (kind === 1) {
    const lines = Array.from({ length: 1 + Math.floor(random() * 6) }, () => pick(random, CODE)).join('');
    return { name: 'write_file', args: { path: pick(random, PATHS), content: lines } };
  }
  if (kind === 2)
    return {
      name: 'run_command',
      args: {
        command: pick(random, COMMANDS),
        timeout: 30 + Math.floor(random() * 300),
        background: chance(random, 0.2),
      },
    };
  if (kind === 3)
    return {
      name: 'search',
      args: {
        query: pick(random, PROSE).slice(0, 40),
        max_results: 5 + Math.floor(random() * 10),
        filters: { lang: pick(random, ['en', 'fr', 'zh']), recent: chance(random, 0.5) },
      },
    };
  if (kind === 4)
    return {
      name: 'edit_file',
      args: {
        path: pick(random, PATHS),
        old_string: pick(random, CODE),
        new_string: pick(random, CODE),
        replace_all: false,
      },
    };
  return {
    name: 'get_weather',
    args: {
      city: pick(random, CITIES),
      unit: pick(random, ['celsius', 'fahrenheit']),
      days: [1, 2, 3].slice(0, 1 + Math.floor(random() * 3)),
    },
  };
}

export const TOOLS: ToolSchema[] = [
  tool('read_file', { path: { type: 'string' }, limit: { type: 'integer' } }),
  tool('write_file', { path: { type: 'string' }, content: { type: 'string' } }),
  tool('run_command', {
    command: { type: 'string' },
    timeout: { type: 'integer' },
    background: { type: 'boolean' },
  }),
  tool('search', {
    query: { type: 'string' },
    max_results: { type: 'integer' },
    filters: { type: 'object' },
  }),
  tool('edit_file', {
    path: { type: 'string' },
    old_string: { type: 'string' },
    new_string: { type: 'string' },
    replace_all: { type: 'boolean' },
  }),
  tool('get_weather', { city: { type: 'string' }, unit: { type: 'string' }, days: { type: 'array' } }),
];

function tool(name: string, properties: Record<string, unknown>): ToolSchema {
  return { type: 'function', function: { name, parameters: { type: 'object', properties } } };
}

/** JSON the way different models and servers print it. */
interface JsonStyle {
  layout: 'python' | 'compact' | 'pretty';
  asciiOnly: boolean;
  escapeSlash: boolean;
}

function jsonStyle(random: Random): JsonStyle {
  return {
    layout: pick(random, ['python', 'python', 'compact', 'pretty'] as const),
    asciiOnly: chance(random, 0.3),
    escapeSlash: chance(random, 0.1),
  };
}

function writeJson(value: unknown, style: JsonStyle, indent = ''): string {
  if (value === null || typeof value !== 'object') {
    let text = JSON.stringify(value);
    if (typeof value === 'string') {
      if (style.asciiOnly)
        text = text.replace(
          /[\u007f-\uffff]/g,
          (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
        );
      if (style.escapeSlash) text = text.replace(/\//g, '\\/');
    }
    return text;
  }
  const inner = `${indent}  `;
  const [open, close, entries] = Array.isArray(value)
    ? ['[', ']', value.map((item) => writeJson(item, style, inner))]
    : [
        '{',
        '}',
        Object.entries(value).map(
          ([key, item]) =>
            `${writeJson(key, style)}${style.layout === 'compact' ? ':' : ': '}${writeJson(item, style, inner)}`,
        ),
      ];
  if (entries.length === 0) return `${open}${close}`;
  if (style.layout === 'pretty') return `${open}\n${inner}${entries.join(`,\n${inner}`)}\n${indent}${close}`;
  return `${open}${entries.join(style.layout === 'compact' ? ',' : ', ')}${close}`;
}

/** A call object with its keys in the order a model chose. */
function callObject(
  call: Call,
  random: Random,
  argsKey = 'arguments',
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const entries: [string, unknown][] = [['name', call.name], [argsKey, call.args], ...Object.entries(extra)];
  if (chance(random, 0.2)) entries.reverse();
  return Object.fromEntries(entries);
}

function preface(random: Random, think: boolean): string {
  let out = '';
  if (think && chance(random, 0.3)) out += `<think>\n${pick(random, THOUGHTS)}\n</think>\n\n`;
  if (chance(random, 0.6)) out += `${pick(random, PROSE)}${pick(random, ['\n', '\n\n', ' '])}`;
  return out;
}

function endToken(random: Random, tokens: readonly string[]): string {
  return chance(random, 0.7) ? `${pick(random, ['', '\n'])}${pick(random, tokens)}` : '';
}

function calls(random: Random, max: number): Call[] {
  return Array.from({ length: 1 + Math.floor(random() * max) }, () => makeCall(random));
}

function alnum(random: Random, length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length }, () => pick(random, alphabet.split(''))).join('');
}

/** Raw value text as the XML templates print it: strings raw, others JSON / Python-ish. */
function xmlValue(value: unknown, random: Random, style: JsonStyle): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return chance(random, 0.5) ? String(value) : value ? 'True' : 'False';
  if (typeof value === 'number') return String(value);
  return writeJson(value, style);
}

const WRITERS: Record<string, (random: Random) => CorpusOutput> = {
  hermes(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const blocks = list.map((call) => {
      const body = writeJson(callObject(call, random), style);
      return chance(random, 0.8) ? `<tool_call>\n${body}\n</tool_call>` : `<tool_call>${body}</tool_call>`;
    });
    return {
      text: preface(random, true) + blocks.join('\n') + endToken(random, ['<|im_end|>', '<|endoftext|>']),
      calls: list.length,
      expected: list,
    };
  },
  qwen(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const blocks = list.map(
      (call) => `<tool_call>\n${writeJson(callObject(call, random), style)}\n</tool_call>`,
    );
    return {
      text: preface(random, true) + blocks.join('\n') + endToken(random, ['<|im_end|>']),
      calls: list.length,
      expected: list,
    };
  },
  mistral(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const shape = pick(random, ['pre_v11', 'v11', 'v13', 'bare']);
    let body: string;
    if (shape === 'pre_v11') {
      const items = list.map((call) =>
        writeJson(
          callObject(call, random, 'arguments', chance(random, 0.6) ? { id: alnum(random, 9) } : {}),
          style,
        ),
      );
      body = `[TOOL_CALLS]${pick(random, [' ', ''])}[${items.join(style.layout === 'compact' ? ',' : ', ')}]`;
    } else
      body = list
        .map((call) => {
          const id = shape === 'v11' ? `[CALL_ID]${alnum(random, 9)}` : '';
          const args = shape === 'bare' ? '' : '[ARGS]';
          return `[TOOL_CALLS]${call.name}${id}${args}${writeJson(call.args, style)}`;
        })
        .join('');
    return {
      text: preface(random, false) + body + endToken(random, ['</s>']),
      calls: list.length,
      expected: list,
    };
  },
  llama3_json(random) {
    const list = calls(random, 2);
    const style = jsonStyle(random);
    const objects = list.map((call) =>
      writeJson(callObject(call, random, chance(random, 0.8) ? 'parameters' : 'arguments'), style),
    );
    const tagged = chance(random, 0.4);
    const text = `${tagged ? `${chance(random, 0.3) ? pick(random, PROSE) : ''}<|python_tag|>` : ''}${objects.join(pick(random, ['; ', ';']))}`;
    return {
      text: text + endToken(random, ['<|eot_id|>', '<|eom_id|>']),
      calls: list.length,
      expected: list,
    };
  },
  qwen3_coder(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const compact = chance(random, 0.15);
    const blocks = list.map((call) => {
      const params = Object.entries(call.args)
        .map(([key, value]) =>
          compact
            ? `<parameter=${key}>${xmlValue(value, random, style)}</parameter>`
            : `<parameter=${key}>\n${xmlValue(value, random, style)}\n</parameter>\n`,
        )
        .join('');
      const fn = compact
        ? `<function=${call.name}>${params}</function>`
        : `<function=${call.name}>\n${params}</function>`;
      return chance(random, 0.9) ? `<tool_call>\n${fn}\n</tool_call>` : fn;
    });
    return {
      text: preface(random, true) + blocks.join('\n') + endToken(random, ['<|im_end|>']),
      calls: list.length,
      expected: list,
    };
  },
  deepseek_v3(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const items = list.map(
      (call) =>
        `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${call.name}\n\`\`\`json\n${writeJson(call.args, style)}\n\`\`\`<｜tool▁call▁end｜>`,
    );
    return {
      text: `${preface(random, false)}<｜tool▁calls▁begin｜>${items.join(pick(random, ['\n', '']))}<｜tool▁calls▁end｜>${endToken(random, ['<｜end▁of▁sentence｜>'])}`,
      calls: list.length,
      expected: list,
    };
  },
  deepseek_v31(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const items = list.map(
      (call) =>
        `<｜tool▁call▁begin｜>${call.name}<｜tool▁sep｜>${writeJson(call.args, style)}<｜tool▁call▁end｜>`,
    );
    return {
      text: `${preface(random, false)}<｜tool▁calls▁begin｜>${items.join('')}<｜tool▁calls▁end｜>${endToken(random, ['<｜end▁of▁sentence｜>'])}`,
      calls: list.length,
      expected: list,
    };
  },
  kimi_k2(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    let counter = Math.floor(random() * 20);
    const items = list.map((call) => {
      const id = `${chance(random, 0.9) ? 'functions.' : ''}${call.name}:${counter++}`;
      const gap = pick(random, ['', '\n', ' ']);
      return `<|tool_call_begin|>${id}${gap}<|tool_call_argument_begin|>${writeJson(call.args, style)}${gap}<|tool_call_end|>`;
    });
    return {
      text: `${preface(random, false)}<|tool_calls_section_begin|>${items.join(pick(random, ['', '\n']))}<|tool_calls_section_end|>${endToken(random, ['<|im_end|>'])}`,
      calls: list.length,
      expected: list,
    };
  },
  glm45(random) {
    const list = calls(random, 3);
    const style = jsonStyle(random);
    const blocks = list.map((call) => {
      const pairs = Object.entries(call.args)
        .map(
          ([key, value]) =>
            `\n<arg_key>${key}</arg_key>\n<arg_value>${typeof value === 'string' ? value : writeJson(value, style)}</arg_value>`,
        )
        .join('');
      return `<tool_call>${call.name}${pairs}\n</tool_call>`;
    });
    return {
      text: preface(random, true) + blocks.join('\n') + endToken(random, ['<|observation|>', '<|user|>']),
      calls: list.length,
      expected: list,
    };
  },
};

export const CORPUS_FORMATS = Object.keys(WRITERS);

/** `count` outputs in `format`, the same for every run (seeded by the format's name). */
export function createCorpus(format: string, count: number): Corpus {
  const writer = WRITERS[format];
  if (!writer) throw new Error(`no corpus writer for "${format}" (available: ${CORPUS_FORMATS.join(', ')})`);
  let seed = 17;
  for (const char of format) seed = Math.imul(seed ^ char.charCodeAt(0), 16777619) >>> 0;
  const random = createSeededRandom(seed);
  return { format, outputs: Array.from({ length: count }, () => writer(random)), tools: TOOLS };
}
