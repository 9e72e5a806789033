// The bench's MCP server (the SDK's McpServer): one stateless tool, `count_words`, the same
// function the bench offers natively. `stdio` (default) serves over stdio; `http` serves
// streamable HTTP on 127.0.0.1 (stateless: a fresh McpServer per request) and prints its URL.
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const countWords = (text) => text.split(/\s+/).filter(Boolean).length;

function server() {
  const mcp = new McpServer({ name: 'count-words', version: '1.0.0' });
  mcp.registerTool(
    'count_words',
    { description: 'Count the words of a text', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: String(countWords(text)) }] }),
  );
  return mcp;
}

if (process.argv[2] === 'http') {
  const http = createServer(async (request, response) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server().connect(transport);
    await transport.handleRequest(request, response);
  });
  http.listen(0, '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${http.address().port}/mcp\n`);
  });
} else {
  await server().connect(new StdioServerTransport());
}
