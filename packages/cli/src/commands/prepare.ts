// `shears prepare`: runs the configured env's set-up ahead of a run — for the SWE env, builds the
// base image and one image per task repository (cached by content hash) — printing progress, then
// a line per prepared image. A later `process`, `serve` or `evaluate` finds everything ready.
import { composeRegistry, createEnv } from '../compose.js';
import type { CommandContext } from '../runtime.js';

interface PreparedEntries {
  prepared?: ReadonlyMap<string, { image?: string }>;
}

export async function prepareCommand(context: CommandContext): Promise<number> {
  const { config, io } = context;
  const started = Date.now();
  const { registry } = await composeRegistry(config, { cwd: io.cwd, logger: context.logger });
  const env = await createEnv(registry, config);
  try {
    if (!env.setup) {
      io.stdout(`env ${config.env.name} needs no preparation\n`);
      return 0;
    }
    await env.setup({ signal: context.signal, logger: context.logger });
    if (context.signal.aborted) {
      io.stderr('preparation interrupted; what was built is kept and reused next time\n');
      return 130;
    }
    const prepared = (env as PreparedEntries).prepared;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (prepared && prepared.size > 0) {
      const width = Math.max(...[...prepared.keys()].map((id) => id.length));
      for (const [id, entry] of prepared) io.stdout(`${id.padEnd(width)}  ${entry.image ?? '-'}\n`);
      io.stdout(`prepared ${prepared.size} task(s) of env ${config.env.name} in ${seconds} s\n`);
    } else io.stdout(`prepared env ${config.env.name} in ${seconds} s\n`);
    return 0;
  } finally {
    await env.close?.();
  }
}
