// Writes docs/cli.md from the flag table in src/args.ts (`pnpm -F @shears/cli docs:cli`); a test
// keeps the committed file equal to it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCliReference } from '../src/args.js';

const target = join(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md');
writeFileSync(target, renderCliReference());
process.stdout.write(`wrote ${target}\n`);
