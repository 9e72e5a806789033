// What the model is shown of a tool: its OpenAI function definition, with the JSON schema taken
// from `tool.jsonSchema` or derived once from its zod schema.
import { z } from 'zod';
import type { ToolSchema } from './contracts/chat.js';
import type { ToolV1 } from './contracts/tool.js';

const schemaCache = new WeakMap<ToolV1, Record<string, unknown>>();

/** The JSON schema a tool shows the model: `tool.jsonSchema`, else derived from its zod schema. */
export function toolParametersSchema(tool: ToolV1): Record<string, unknown> {
  if (tool.jsonSchema) return tool.jsonSchema;
  let cached = schemaCache.get(tool);
  if (!cached) {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(tool.inputSchema, {
      io: 'input',
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    cached = rest;
    schemaCache.set(tool, cached);
  }
  return cached;
}

/** OpenAI function-tool definitions for these tools. */
export function toolSchemas(tools: readonly ToolV1[]): ToolSchema[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: toolParametersSchema(tool) },
  }));
}
