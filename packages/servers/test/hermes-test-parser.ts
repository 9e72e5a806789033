// Test helper: a minimal hermes-style parser (`<tool_call>{json}</tool_call>`) used until
// @shears/parsers is available to this package's tests. Only what the rollout tests need.
import type { ParseResult, ToolCallParserV1 } from '@shears/core';

export function hermesTestParser(): ToolCallParserV1 {
  const parse = (text: string): ParseResult => {
    const pattern = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
    const toolCalls: ParseResult['toolCalls'] = [];
    const first = text.indexOf('<tool_call>');
    for (const match of text.matchAll(pattern)) {
      const value = JSON.parse(match[1] as string) as { name: string; arguments: unknown };
      toolCalls.push({ name: value.name, arguments: JSON.stringify(value.arguments).replace(/":/g, '": ').replace(/,"/g, ', "') });
    }
    const content = first >= 0 ? text.slice(0, first).replace(/\s+$/, '') : text;
    return { content: toolCalls.length > 0 && content === '' ? null : content, toolCalls, issues: [] };
  };
  return {
    specificationVersion: 'v1',
    id: 'hermes-test',
    parse,
    createStream() {
      let buffer = '';
      return { feed: (delta) => ((buffer += delta), []), finish: () => parse(buffer) };
    },
    render: ({ content, toolCalls }) =>
      [content ?? '', ...toolCalls.map((call) => `<tool_call>\n{"name": "${call.name}", "arguments": ${call.arguments}}\n</tool_call>`)].filter(Boolean).join('\n'),
  };
}
