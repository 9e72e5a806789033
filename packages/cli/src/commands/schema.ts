// `shears schema`: print the config's JSON Schema (for editor completion via `$schema`).
import { z } from 'zod';
import { shearsConfigSchema } from '../config/config-schema.js';
import type { CommandContext } from '../runtime.js';

export function configJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://shears.dev/schema/config.json',
    ...(z.toJSONSchema(shearsConfigSchema, { io: 'input', unrepresentable: 'any' }) as Record<
      string,
      unknown
    >),
  };
}

export async function schemaCommand(context: CommandContext): Promise<number> {
  context.io.stdout(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
  return 0;
}
