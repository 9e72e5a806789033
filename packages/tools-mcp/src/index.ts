// @shears/tools-mcp: MCP servers' tools as shears tools, through the official MCP SDK.

export type { McpPhase } from './errors.js';
export { McpServerError, McpToolDefinitionError } from './errors.js';
export type { CreateMcpToolsOptions } from './mcp-tools.js';
export { closeMcpTools, createMcpTools } from './mcp-tools.js';
export { default, default as plugin } from './plugin.js';
export type { MapCallToolResultOptions, McpCallResultLike, McpToolData } from './result-mapping.js';
export { mapCallToolResult } from './result-mapping.js';
export type { SandboxStdioTransportOptions } from './sandbox-stdio-transport.js';
export { SandboxStdioTransport } from './sandbox-stdio-transport.js';
export type {
  McpHttpServerSettings,
  McpServerSettings,
  McpStdioServerSettings,
  McpToolsSettings,
} from './settings.js';
export {
  mcpToolsSettingsSchema,
  parseMcpToolsSettings,
  resolveHeaders,
  safeParseMcpToolsSettings,
} from './settings.js';
