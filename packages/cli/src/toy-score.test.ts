// The reference trainer's `toy_score` (trainers/shears_trainer/toy_loop.py) is the toy env's
// reward read from a turn's text: the one-process learning test trains on it, and `toy-accuracy`
// measures the whole-chain learning test's final models with it. It must give what the chain
// gives: shears' hermes parser reading the turn, the toy pack's `save` tool running each call,
// the verifier reading back the last word saved. Here both score the same corpus of model-like
// outputs (calls around, after and inside text, unclosed tags, text after a call's JSON, two
// calls, broken JSON, arguments as strings, wrong types, unknown tools); a measure stricter than
// the reward once read a policy the chain rewarded (0.89 at its last version) as earning 0.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { hermesParser } from '@shears/parsers';
import { describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..', '..');
// The toy pack's own tool and decoy word (plain JavaScript, bundled in examples/).
const { createSaveTool, DECOY_WORD } = (await import(
  pathToFileURL(join(repoRoot, 'examples', 'toy-pack', 'src', 'index.js')).href
)) as {
  createSaveTool: () => {
    inputSchema: { safeParse: (value: unknown) => { success: boolean; data?: unknown } };
  };
  DECOY_WORD: string;
};
const python = join(repoRoot, '.venv', 'bin', 'python');
const WORD = 'mazu';
const END = '<|im_end|>';

/** The chain's reward for one first turn: parse as the managed server does, run each call, read back. */
function chainReward(text: string): number {
  const tool = createSaveTool();
  const parsed = hermesParser.parse(text.endsWith(END) ? text.slice(0, -END.length) : text, {
    tools: [{ type: 'function', function: { name: 'save', parameters: { type: 'object' } } }],
  });
  let saved: string | undefined;
  for (const call of parsed.toolCalls) {
    if (call.name !== 'save') continue;
    let args: unknown;
    try {
      args = JSON.parse(call.arguments);
    } catch {
      continue;
    }
    const checked = tool.inputSchema.safeParse(args);
    if (checked.success) saved = (checked.data as { word: string }).word;
  }
  return saved === undefined ? 0 : saved === WORD ? 1 : 0.1;
}

function corpus(): string[] {
  const words = [WORD, DECOY_WORD, 'lapa', '', 'x'.repeat(64), 'x'.repeat(65)];
  const bodies = [
    ...words.flatMap((word) => [
      `{"name":"save","arguments":{"word":${JSON.stringify(word)}}}`,
      `{"name": "save", "arguments": {"word": ${JSON.stringify(word)}}}`,
      `{"arguments":{"word":${JSON.stringify(word)}},"name":"save"}`,
      `{"name":"save","arguments":${JSON.stringify(JSON.stringify({ word }))}}`,
      `{"name":"save","arguments":{"word":${JSON.stringify(word)},"x":1}}`,
    ]),
    `{"name":"save","arguments":{"word":5}}`,
    `{"name":"save","arguments":{"word":null}}`,
    `{"name":"save"}`,
    `{"name":"save","arguments":"not json"}`,
    `{"name":"save","arguments":[1]}`,
    `{"name":"load","arguments":{"word":"${WORD}"}}`,
    `{"arguments":{"word":"${WORD}"}}`,
    '{bad}',
    `{"name":"save","arguments":{"word":"${WORD}`,
    `["save"]`,
  ];
  const closings = ['</tool_call>', '', ' trailing</tool_call>', '\n</tool_call>'];
  const out: string[] = [];
  let pick = 0;
  for (const body of bodies)
    for (const closing of closings)
      for (const [before, after] of [
        ['', END],
        [' ', ''],
        ['\n', END],
        ['ok ', `done${END}`],
      ] as const)
        out.push(`${before}<tool_call>${body}${closing}${after}`);
  // Two calls: the later write wins, a broken one is dropped.
  for (const first of bodies)
    for (const second of bodies) {
      pick++;
      if (pick % 3 !== 0) continue;
      out.push(`<tool_call>${first}</tool_call><tool_call>${second}</tool_call>${END}`);
      out.push(`<tool_call>${first}</tool_call>\n<tool_call>${second}${END}`);
    }
  // One block holding several calls (a JSON array, or objects joined by commas), a block left
  // open before the next one, text after a call's JSON.
  const good = `{"name":"save","arguments":{"word":"${WORD}"}}`;
  const decoy = `{"name":"save","arguments":{"word":"${DECOY_WORD}"}}`;
  out.push(
    `<tool_call>[${decoy}, ${good}]</tool_call>${END}`,
    `<tool_call>[${good}, "x"]</tool_call>${END}`,
    `<tool_call>${decoy}, ${good}</tool_call>${END}`,
    `<tool_call>${good}, "x"</tool_call>${END}`,
    `<tool_call>${decoy}<tool_call>${good}</tool_call>${END}`,
    `<tool_call>${good}<tool_call>${decoy}${END}`,
    `<tool_call>${good}name":"save","arguments":{"word":"${DECOY_WORD}"}}`,
    `<tool_call>${good} ${decoy}</tool_call>${END}`,
    `<tool_call>${decoy}</tool_call>text<tool_call>${good} x</tool_call>${END}`,
  );
  out.push('done', END, '', `<tool_call>${END}`, `</tool_call>${END}`, `save(word=${WORD})${END}`);
  return out;
}

describe('toy_score (reference trainer) against the chain', () => {
  it('gives the chain’s reward for every output of the corpus', async () => {
    expect(existsSync(python), `${python} is missing: bash scripts/setup-python.sh`).toBe(true);
    const texts = corpus();
    const script = [
      'import json, sys',
      'from shears_trainer.toy_loop import toy_score',
      `print(json.dumps([toy_score(text, ${JSON.stringify(WORD)}) for text in json.load(sys.stdin)]))`,
    ].join('\n');
    const child = promisify(execFile)(python, ['-c', script], {
      cwd: join(repoRoot, 'trainers'),
      maxBuffer: 16 * 1024 * 1024,
    });
    child.child.stdin?.end(JSON.stringify(texts));
    const scores = JSON.parse((await child).stdout) as number[];
    const differences = texts
      .map((text, index) => ({ text, python: scores[index], chain: chainReward(text) }))
      .filter((row) => row.python !== row.chain);
    expect(differences).toEqual([]);
    // The corpus reaches every outcome.
    const outcomes = new Set(texts.map(chainReward));
    expect([...outcomes].sort()).toEqual([0, 0.1, 1]);
  });
});
