// The @shears/tools-web plugin manifest: web_search and web_extract, and the `web` and `search`
// toolsets. The registry checks their settings with the tools' strict schemas.
import { definePlugin, definePluginEntry } from '@shears/core';
import { webExtractSettingsSchema, webSearchSettingsSchema } from './settings.js';
import { createWebExtractTool } from './web-extract.js';
import { createWebSearchTool } from './web-search.js';

export default definePlugin({
  id: '@shears/tools-web',
  description: 'web_search (SearXNG, Brave, Tavily, Exa, Firecrawl) and web_extract with an SSRF guard',
  tools: {
    web_search: definePluginEntry({
      settings: webSearchSettingsSchema,
      create: (settings) => createWebSearchTool(settings),
      description: 'Search the web',
    }),
    web_extract: definePluginEntry({
      settings: webExtractSettingsSchema,
      create: (settings) => createWebExtractTool(settings),
      description: 'Fetch pages as markdown',
    }),
  },
  toolsets: {
    web: { description: 'Web search and extraction', tools: ['web_search', 'web_extract'] },
    search: { description: 'Web search only', tools: ['web_search'] },
  },
});
