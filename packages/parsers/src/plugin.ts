// The @shears/parsers manifest: every built-in tool-call parser, by name and alias.
import { definePlugin, type PluginEntry, type ToolCallParserV1 } from '@shears/core';
import { createMistralParser, PARSERS } from './parsers.js';

const parsers: Record<string, PluginEntry<ToolCallParserV1>> = {};
for (const parser of PARSERS) {
  parsers[parser.id] = {
    create(settings) {
      if (parser.id === 'mistral' && settings.renderVersion !== undefined) {
        return createMistralParser({ renderVersion: settings.renderVersion as 'v3' | 'v11' | 'v13' });
      }
      return parser;
    },
    aliases: parser.aliases ?? [],
    description: `Tool-call parser "${parser.id}"`,
  };
}

export default definePlugin({
  id: '@shears/parsers',
  description:
    'Tool-call parsers: hermes, qwen, qwen3_coder, mistral, llama3_json, deepseek_v3, deepseek_v31, kimi_k2, glm45',
  parsers,
});
