// docs/tools-from-mcp.md, run as written: its config (the tasks env with the tools of a real
// @modelcontextprotocol/server-filesystem started over stdio inside each rollout's local sandbox)
// and its task file, with a scripted model in place of `server`. The verifier checks in each
// rollout's sandbox the file the model wrote through the MCP server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { type ScoredGroupRecord, scoredGroupRecordSchema } from '@shears/core';
import { createScriptedServer } from '@shears/core/test';
import { afterAll, describe, expect, it } from 'vitest';
import { runShears } from './test-support/run-cli.js';

const root = join(import.meta.dirname, '..', '..', '..');
const guide = readFileSync(join(root, 'docs', 'tools-from-mcp.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'shears-mcp-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first fenced block of `language` after `heading` in the guide. */
function block(language: string, after: string): string {
  const start = guide.indexOf(after);
  const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(guide.slice(start));
  if (start < 0 || !found) throw new Error(`docs/tools-from-mcp.md: no ${language} block after "${after}"`);
  return found[1]!;
}

describe('docs/tools-from-mcp.md', () => {
  it('its config runs: the model writes a file through the MCP server in its sandbox, the verifier sees it', async () => {
    // `mcp-server-filesystem` on PATH, as `npm install -g` would put it (here: the package's bin).
    const bin = join(root, 'packages', 'tools-mcp', 'node_modules', '.bin');
    expect(readFileSync(join(bin, 'mcp-server-filesystem'), 'utf8')).toContain('server-filesystem');
    process.env.PATH = `${bin}${delimiter}${process.env.PATH}`;

    let calls = 0;
    const model = await createScriptedServer({
      policy: (request) => {
        if (request.messages.some((message) => message.role === 'tool')) return { content: 'done' };
        const offered = (request.tools ?? []).map((tool) => tool.function.name);
        expect(offered).toEqual(expect.arrayContaining(['fs__write_file', 'fs__read_text_file']));
        // One rollout of the group writes the right text, the other a wrong one.
        const content = calls++ % 2 === 0 ? 'written over MCP' : 'something else';
        return { toolCalls: [{ name: 'fs__write_file', arguments: { path: 'notes.txt', content } }] };
      },
    });
    try {
      const config = block('yaml', '## A config').replace(
        /^server: .*$/m,
        `server: { provider: openai, base_url: ${model.url}, model: scripted, api_key: none }`,
      );
      writeFileSync(join(dir, 'mcp.yaml'), config);
      writeFileSync(join(dir, 'tasks.jsonl'), block('json', 'with `tasks.jsonl`'));
      const run = await runShears(['process', '--config', 'mcp.yaml'], { cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      const groups: ScoredGroupRecord[] = readFileSync(join(dir, 'runs/mcp.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => scoredGroupRecordSchema.parse(JSON.parse(line)));
      expect(groups).toHaveLength(1);
      expect([...groups[0]!.scores].sort()).toEqual([0, 1]);
      for (const rollout of groups[0]!.rollouts)
        expect(rollout.outcome, rollout.outcomeReason ?? '').toBe('scored');
    } finally {
      await model.close();
    }
  });
});
