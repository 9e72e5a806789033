// The config's JSON Schema (for editor completion via `$schema`; `shears schema` prints it and the
// package ships it as shears.schema.json).
import { z } from 'zod';
import { shearsConfigSchema } from './config-schema.js';

export function configJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://shears.dev/schema/config.json',
    ...(z.toJSONSchema(shearsConfigSchema, { io: 'input', unrepresentable: 'any' }) as Record<
      string,
      unknown
    >),
  };
}
