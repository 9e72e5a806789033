import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxV1 } from './contracts/sandbox.js';
import { createTempSandboxProvider } from './test/temp-sandbox-provider.js';
import {
  buildPersistedMessage,
  enforceTurnBudget,
  generatePreview,
  maybePersistToolResult,
  resolveResultThreshold,
} from './tool-result-budget.js';

const provider = createTempSandboxProvider();
let sandbox: SandboxV1;
beforeAll(async () => {
  sandbox = await provider.acquire();
});
afterAll(() => provider.close());

describe('resolveResultThreshold', () => {
  it('resolves pinned, then overrides, then the tool, then the default', () => {
    expect(resolveResultThreshold('read_file', { budget: { toolOverrides: { read_file: 10 } } })).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(
      resolveResultThreshold('terminal', {
        budget: { toolOverrides: { terminal: 10 } },
        tool: { maxResultChars: 20 },
      }),
    ).toBe(10);
    expect(resolveResultThreshold('terminal', { tool: { maxResultChars: 20 } })).toBe(20);
    expect(resolveResultThreshold('terminal', { budget: { defaultResultSize: 30 } })).toBe(30);
    expect(resolveResultThreshold('terminal')).toBe(100_000);
  });
});

describe('generatePreview', () => {
  it('cuts after the last newline only when it sits past the middle', () => {
    expect(generatePreview('short', 10)).toEqual({ preview: 'short', hasMore: false });
    expect(generatePreview('aaaaaaa\nbbbbbbbbbb', 10)).toEqual({ preview: 'aaaaaaa\n', hasMore: true });
    expect(generatePreview('aa\nbbbbbbbbbbbbbb', 10)).toEqual({ preview: 'aa\nbbbbbbb', hasMore: true });
  });
});

describe('buildPersistedMessage', () => {
  it("matches hermes' block exactly, in KB and MB", () => {
    expect(
      buildPersistedMessage({
        preview: 'abc',
        hasMore: true,
        originalSize: 123_456,
        filePath: '/tmp/hermes-results/call_abc.txt',
      }),
    ).toBe(
      '<persisted-output>\n' +
        'This tool result was too large (123,456 characters, 120.6 KB).\n' +
        'Full output saved to: /tmp/hermes-results/call_abc.txt\n' +
        'Use the read_file tool with offset and limit to access specific sections of this output.\n\n' +
        'Preview (first 3 chars):\n' +
        'abc\n...\n' +
        '</persisted-output>',
    );
    const large = buildPersistedMessage({
      preview: 'x',
      hasMore: false,
      originalSize: 2_500_000,
      filePath: '/p',
    });
    expect(large).toContain('(2,500,000 characters, 2.4 MB)');
    expect(large.endsWith('Preview (first 1 chars):\nx\n</persisted-output>')).toBe(true);
  });
});

describe('maybePersistToolResult', () => {
  it('leaves results under the threshold alone', async () => {
    const outcome = await maybePersistToolResult({
      content: 'small',
      toolName: 'terminal',
      toolCallId: 'c0',
      sandbox,
    });
    expect(outcome).toEqual({ content: 'small', persisted: false, replaced: false });
  });

  it('writes the full text into the sandbox temp dir', async () => {
    const content = 'z'.repeat(2_000);
    const outcome = await maybePersistToolResult({
      content,
      toolName: 'terminal',
      toolCallId: 'call_1',
      sandbox,
      budget: { toolOverrides: { terminal: 1_000 } },
    });
    expect(outcome.persisted).toBe(true);
    expect(outcome.path).toBe(`${sandbox.tempDir}/hermes-results/call_1.txt`);
    expect(await readFile(outcome.path ?? '', 'utf8')).toBe(content);
    expect(outcome.content).toContain('Preview (first 1500 chars):\n');
    expect(outcome.content).toContain('(2,000 characters, 2.0 KB)');
  });

  it('never persists a pinned tool', async () => {
    const content = 'y'.repeat(300_000);
    expect(
      (await maybePersistToolResult({ content, toolName: 'read_file', toolCallId: 'c', sandbox })).replaced,
    ).toBe(false);
  });

  it('falls back to an inline truncation when the write fails', async () => {
    const broken = { tempDir: '/nonexistent', writeFile: () => Promise.reject(new Error('read-only')) };
    const outcome = await maybePersistToolResult({
      content: 'q'.repeat(20),
      toolName: 't',
      toolCallId: 'c',
      sandbox: broken,
      threshold: 10,
      budget: { previewSize: 5 },
    });
    expect(outcome).toEqual({
      content: 'qqqqq\n\n[Truncated: tool response was 20 chars. Full output could not be saved to sandbox.]',
      persisted: false,
      replaced: true,
    });
  });
});

describe('enforceTurnBudget', () => {
  it('persists the largest results of a turn until the total fits', async () => {
    const messages = [
      { role: 'tool', tool_call_id: 'a', content: 'a'.repeat(400) },
      { role: 'tool', tool_call_id: 'b', content: 'b'.repeat(900) },
      { role: 'tool', tool_call_id: 'c', content: 'c'.repeat(300) },
    ];
    const changed = await enforceTurnBudget(messages, {
      sandbox,
      budget: { turnBudget: 1_000, previewSize: 10 },
    });
    expect(changed).toEqual(['b']);
    expect(messages[1]?.content.startsWith('<persisted-output>\n')).toBe(true);
    expect(messages[0]?.content).toBe('a'.repeat(400));
    expect(await readFile(`${sandbox.tempDir}/hermes-results/b.txt`, 'utf8')).toBe('b'.repeat(900));
  });

  it('does nothing under budget', async () => {
    const messages = [{ tool_call_id: 'a', content: 'short' }];
    expect(await enforceTurnBudget(messages, { sandbox })).toEqual([]);
  });
});
