// `shears schema`: print the config's JSON Schema (for editor completion via `$schema`).
import { configJsonSchema } from '../config/config-json-schema.js';
import type { CommandContext } from '../session.js';

export async function schemaCommand(context: CommandContext): Promise<number> {
  context.io.stdout(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
  return 0;
}
