// placeholder
import type { CommandContext } from '../runtime.js';
export async function serveCommand(_context: CommandContext): Promise<number> { return 1; }
