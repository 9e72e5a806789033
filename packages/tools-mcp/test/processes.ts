// Counts live processes whose command line contains `needle` (Linux /proc), for leak checks.
import { readdir, readFile } from 'node:fs/promises';

export async function countProcesses(needle: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // A zombie (state Z) is dead already; only its parent has not reaped it yet.
      if (cmdline.includes(needle) && !/^\d+ \(.*\) Z/.test(stat)) count++;
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}
