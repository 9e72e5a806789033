// placeholder
import type { CommandContext } from '../runtime.js';
export async function trainCommand(_context: CommandContext): Promise<number> { return 1; }
