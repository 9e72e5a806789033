#!/usr/bin/env node
// The `shears` executable: runs the CLI with process I/O. The first Ctrl-C (or SIGTERM) drains:
// no new rollouts start, rollouts that finished their turns still get their rewards (within
// `run.drain_timeout_ms`), and everything done is written. The second stops at once: rewards in
// flight are aborted, sandboxes released, and what is written is marked partial. A third exits
// without cleaning up.
import { runCli } from './cli.js';
import { processIo } from './io.js';

const drain = new AbortController();
const stop = new AbortController();
let interrupts = 0;
const onSignal = (signal: NodeJS.Signals) => {
  interrupts++;
  if (interrupts === 1) {
    process.stderr.write(
      `\n${signal}: stopping: no new rollouts; finished ones still get their rewards (press Ctrl-C again to stop at once)\n`,
    );
    drain.abort(new Error(signal));
  } else if (interrupts === 2) {
    process.stderr.write(`\n${signal}: stopping at once (press Ctrl-C again to exit without cleaning up)\n`);
    stop.abort(new Error(signal));
  } else process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const code = await runCli(process.argv.slice(2), {
  ...processIo(),
  signal: stop.signal,
  drain: drain.signal,
});
// Done: what is left running (an env's reward that ignored its signal, a socket) must not keep
// the command alive. Exit once stdout and stderr are flushed.
const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => stream.write('', () => resolve()));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
