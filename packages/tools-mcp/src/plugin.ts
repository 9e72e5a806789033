// The @shears/tools-mcp plugin manifest: the `mcp` tool entry, whose settings name MCP servers and
// which creates one shears tool per tool they list (toolset `mcp` unless a server says otherwise).
import { definePlugin, definePluginEntry } from '@shears/core';
import { createMcpTools } from './mcp-tools.js';
import { mcpToolsSettingsSchema } from './settings.js';

export default definePlugin({
  id: '@shears/tools-mcp',
  description: "MCP servers' tools: stdio servers inside the rollout's sandbox, streamable-HTTP servers",
  tools: {
    mcp: definePluginEntry({
      settings: mcpToolsSettingsSchema,
      create: (settings) => createMcpTools(settings),
      description: 'The tools of the MCP servers named in its settings',
    }),
  },
});
