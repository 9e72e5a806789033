// The @shears/tools-web plugin manifest: web_search and web_extract, and the `web` and `search`
// toolsets. Settings arrive untyped (config files), so they are checked by strict schemas first.
import { definePlugin } from '@shears/core';
import { parseWebExtractSettings, parseWebSearchSettings } from './settings.js';
import { createWebExtractTool } from './web-extract.js';
import { createWebSearchTool } from './web-search.js';

export default definePlugin({
  id: '@shears/tools-web',
  description: 'web_search (SearXNG, Brave, Tavily, Exa, Firecrawl) and web_extract with an SSRF guard',
  tools: {
    web_search: {
      create: (settings) => createWebSearchTool(parseWebSearchSettings(settings)),
      description: 'Search the web',
    },
    web_extract: {
      create: (settings) => createWebExtractTool(parseWebExtractSettings(settings)),
      description: 'Fetch pages as markdown',
    },
  },
  toolsets: {
    web: { description: 'Web search and extraction', tools: ['web_search', 'web_extract'] },
    search: { description: 'Web search only', tools: ['web_search'] },
  },
});
