#!/usr/bin/env node
import { runCli } from './cli.js';
// The `shears` executable: runs the CLI with process I/O; Ctrl-C aborts the run cleanly (a
// second Ctrl-C exits at once).
import { processIo } from './io.js';

const controller = new AbortController();
let interrupts = 0;
const onSignal = (signal: NodeJS.Signals) => {
  interrupts++;
  if (interrupts > 1) process.exit(130);
  process.stderr.write(`\n${signal}: stopping (press Ctrl-C again to exit at once)\n`);
  controller.abort(new Error(signal));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const code = await runCli(process.argv.slice(2), { ...processIo(), signal: controller.signal });
process.exitCode = code;
