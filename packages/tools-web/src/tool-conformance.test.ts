// The kernel's ToolV1 conformance suite for web_search and web_extract (no traffic leaves the
// process: a provider object answers the search; the extract URL is refused by the SSRF guard).
import { describeToolConformance } from '@shears/core/test';
import { createWebExtractTool } from './web-extract.js';
import { createWebSearchTool } from './web-search.js';

describeToolConformance({
  tool: () =>
    createWebSearchTool({
      provider: 'fixed',
      customProvider: {
        id: 'fixed',
        envVars: [],
        configured: () => true,
        search: async (query) => [
          { title: query, url: 'https://example.org/', description: 'a fixed answer' },
        ],
      },
    }),
  validArguments: [{ query: 'shears' }, { query: 'shears', limit: 3 }],
  invalidArguments: [{}, { query: 7 }],
});
describeToolConformance({
  tool: () => createWebExtractTool(),
  validArguments: [{ urls: ['file:///etc/passwd'] }],
  invalidArguments: [{}, { urls: 'https://example.org' }],
});
