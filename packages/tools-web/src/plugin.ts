// The @shears/tools-web plugin manifest: web_search and web_extract, and the `web` and `search`
// toolsets.
import { definePlugin } from '@shears/core';
import { createWebExtractTool, type WebExtractSettings } from './web-extract.js';
import { createWebSearchTool, type WebSearchSettings } from './web-search.js';

export default definePlugin({
  id: '@shears/tools-web',
  description: 'web_search (SearXNG, Brave, Tavily, Exa, Firecrawl) and web_extract with an SSRF guard',
  tools: {
    web_search: {
      create: (settings) => createWebSearchTool(settings as WebSearchSettings),
      description: 'Search the web',
    },
    web_extract: {
      create: (settings) => createWebExtractTool(settings as WebExtractSettings),
      description: 'Fetch pages as markdown',
    },
  },
  toolsets: {
    web: { description: 'Web search and extraction', tools: ['web_search', 'web_extract'] },
    search: { description: 'Web search only', tools: ['web_search'] },
  },
});
