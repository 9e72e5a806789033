// The @shears/parsers manifest: every built-in tool-call parser, by name and alias. Only mistral
// has a setting (the render format of its tokenizer version); the others take none, and the
// registry refuses any setting given to them.
import { definePlugin, definePluginEntry, type PluginEntry, type ToolCallParserV1 } from '@shears/core';
import { z } from 'zod';
import { createMistralParser, PARSERS } from './parsers.js';

const noSettings = z.strictObject({});
const mistralSettings = z.strictObject({ renderVersion: z.enum(['v3', 'v11', 'v13']).optional() });

const parsers: Record<string, PluginEntry<ToolCallParserV1, object>> = {};
for (const parser of PARSERS) {
  const common = { aliases: parser.aliases ?? [], description: `Tool-call parser "${parser.id}"` };
  parsers[parser.id] =
    parser.id === 'mistral'
      ? definePluginEntry({
          ...common,
          settings: mistralSettings,
          create: (settings) =>
            settings.renderVersion === undefined
              ? parser
              : createMistralParser({ renderVersion: settings.renderVersion }),
        })
      : definePluginEntry({ ...common, settings: noSettings, create: () => parser });
}

export default definePlugin({
  id: '@shears/parsers',
  description:
    'Tool-call parsers: hermes, qwen, qwen3_coder, mistral, llama3_json, deepseek_v3, deepseek_v31, kimi_k2, glm45',
  parsers,
});
