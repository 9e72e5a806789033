// Package managers and build tools that run a command (`npx`, `uv run`, `poetry run`,
// `cmake -E`, ...) or whose options change what they run (`npm --script-shell`, `cargo --config`).

import type { Handler } from './options.js';
import type { ProgramContext, ShellWord } from './types.js';

/** Options of package managers that change which shell, node or editor they run. */
function npmConfigHazard(context: ProgramContext, args: readonly ShellWord[]): boolean {
  for (const word of args) {
    if (
      /^--(?:script-shell|node-options|shell|editor|browser|git|userconfig|globalconfig|call|viewer|node-gyp)(?:=|$)/.test(
        word.text,
      )
    ) {
      context.hazard(`${context.name} ${word.text.split('=')[0]} (it changes what ${context.name} runs)`);
      return true;
    }
  }
  return false;
}

/** `runner [options] command args`: the first word not an option is the command. */
function runCommand(
  context: ProgramContext,
  args: readonly ShellWord[],
  valueOptions: readonly string[],
  shellOptions: readonly string[] = [],
): void {
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index]!;
    const text = word.text;
    if (text === '--') {
      context.command(args.slice(index + 1));
      return;
    }
    if (shellOptions.includes(text)) {
      const value = args[index + 1];
      if (value) context.script(value, `the command given to ${context.name} ${text}`);
      return;
    }
    const equals = text.indexOf('=');
    if (shellOptions.some((option) => text.startsWith(`${option}=`))) {
      context.script(text.slice(equals + 1), `the command given to ${context.name}`);
      return;
    }
    if (text.startsWith('-') && !word.dynamic) {
      if (equals < 0 && valueOptions.includes(text)) index += 1;
      continue;
    }
    context.command(args.slice(index));
    return;
  }
}

export const npm: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  const subcommandIndex = args.findIndex((word) => !word.text.startsWith('-'));
  const subcommand = args[subcommandIndex]?.text;
  const rest = args.slice(subcommandIndex + 1);
  if (subcommand === 'exec' || subcommand === 'x') {
    runCommand(context, rest, ['-p', '--package', '-w', '--workspace'], ['-c', '--call']);
  } else if (
    (subcommand === 'config' || subcommand === 'c') &&
    /^(?:set|edit|delete)$/.test(rest[0]?.text ?? '')
  ) {
    context.hazard('npm config (it changes what npm runs)');
  } else if (subcommand === 'set') {
    context.hazard('npm set (it changes what npm runs)');
  }
};

export const npx: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  runCommand(context, args, ['-p', '--package', '-w', '--workspace'], ['-c', '--call']);
};

export const pnpm: Handler = (context) => {
  const args = context.words.slice(1);
  if (npmConfigHazard(context, args)) return;
  const shellMode = args.some((word) => word.text === '-c' || word.text === '--shell-mode');
  const subcommandIndex = args.findIndex(
    (word, index) =>
      !word.text.startsWith('-') &&
      !['-C', '--dir', '--filter', '-F', '--workspace-root'].includes(args[index - 1]?.text ?? ''),
  );
  const subcommand = args[subcommandIndex]?.text;
  const rest = args.slice(subcommandIndex + 1);
  if (subcommand === 'exec' || subcommand === 'dlx') {
    if (shellMode) {
      const command = rest.filter((word) => !word.text.startsWith('-'));
      if (command.some((word) => word.dynamic)) context.hazard('a command for pnpm computed at run time');
      else context.script(command.map((word) => word.text).join(' '), 'the command given to pnpm -c');
    } else {
      runCommand(context, rest, ['--package', '--filter', '-F', '-C', '--dir']);
    }
  } else if (subcommand === 'config' && /^(?:set|delete)$/.test(rest[0]?.text ?? '')) {
    context.hazard('pnpm config (it changes what pnpm runs)');
  }
};

export const yarn: Handler = (context) => {
  const args = context.words.slice(1);
  const sub = args[0]?.text;
  if (sub === 'exec' || sub === 'dlx') runCommand(context, args.slice(1), ['-p', '--package']);
  else if (sub === 'config' && /^(?:set|unset)$/.test(args[1]?.text ?? ''))
    context.hazard('yarn config (it changes what yarn runs)');
};

export const bunx: Handler = (context) => runCommand(context, context.words.slice(1), ['-p', '--package']);

export const uv: Handler = (context) => {
  const args = context.words.slice(1);
  const values = [
    '--with',
    '--with-requirements',
    '--python',
    '-p',
    '--package',
    '--directory',
    '--project',
    '--env-file',
    '--group',
    '--extra',
    '--index',
    '--index-url',
    '--extra-index-url',
    '--from',
    '--config-file',
    '--cache-dir',
  ];
  if (context.name === 'uvx') return runCommand(context, args, values);
  if (args[0]?.text === 'run') return runCommand(context, args.slice(1), values);
  if (args[0]?.text === 'tool' && args[1]?.text === 'run') return runCommand(context, args.slice(2), values);
};

export const subcommandRunner =
  (subcommand: string, values: readonly string[]): Handler =>
  (context) => {
    const args = context.words.slice(1);
    // The first `run` (or `exec`): global options before it may take values (`poetry -C dir run`).
    const at = args.findIndex((word) => word.text === subcommand);
    if (at >= 0) runCommand(context, args.slice(at + 1), values);
  };

/** `rustup run [--install] TOOLCHAIN COMMAND...` */
export const rustup: Handler = (context) => {
  const args = context.words.slice(1);
  const at = args.findIndex((word) => word.text === 'run');
  if (at < 0) return;
  let index = at + 1;
  while (args[index]?.text.startsWith('-')) index += 1;
  if (args[index + 1]) context.command(args.slice(index + 1));
};

/**
 * mise (and rtx): `mise exec|x [TOOL@VERSION...] [-c COMMAND] [-- COMMAND...]`; without a
 * command it starts a shell.
 */
export const mise: Handler = (context) => {
  const args = context.words.slice(1);
  const at = args.findIndex((word) => word.text === 'exec' || word.text === 'x');
  if (at < 0) return;
  const rest = args.slice(at + 1);
  for (let index = 0; index < rest.length; index += 1) {
    const text = rest[index]!.text;
    if (text === '--') {
      if (rest[index + 1]) context.command(rest.slice(index + 1));
      else context.hazard(`${context.name} exec starting a shell`);
      return;
    }
    if ((text === '-c' || text === '--command') && rest[index + 1]) {
      context.script(rest[index + 1]!, `the command given to ${context.name} exec -c`);
      return;
    }
    if (text.startsWith('--command=')) {
      context.script(
        { text: text.slice(10), dynamic: rest[index]!.dynamic },
        `the command given to ${context.name} exec -c`,
      );
      return;
    }
  }
  context.hazard(`${context.name} exec starting a shell`);
};

/** nix-shell: `--run`/`--command` take a command string; without one it is an interactive shell. */
export const nixShell: Handler = (context) => {
  const args = context.words.slice(1);
  for (let index = 0; index < args.length; index += 1) {
    if ((args[index]!.text === '--run' || args[index]!.text === '--command') && args[index + 1]) {
      context.script(args[index + 1]!, `the command given to nix-shell ${args[index]!.text}`);
      return;
    }
  }
  context.hazard('nix-shell starting an interactive shell');
};

/** nix: `nix develop|shell ... -c|--command COMMAND ARGS`; `nix develop` alone starts a shell. */
export const nix: Handler = (context) => {
  const args = context.words.slice(1);
  const sub = args.find((word) => !word.text.startsWith('-'))?.text;
  if (sub !== 'develop' && sub !== 'shell') return;
  const at = args.findIndex((word) => word.text === '-c' || word.text === '--command');
  if (at >= 0 && args[at + 1]) context.command(args.slice(at + 1));
  else context.hazard(`nix ${sub} starting a shell`);
};

/** cross-env: `cross-env [NAME=value...] COMMAND ARGS`; cross-env-shell runs them through a shell. */
export const crossEnv: Handler = (context) => {
  const args = context.words.slice(1);
  let index = 0;
  while (index < args.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[index]!.text)) {
    const text = args[index]!.text;
    context.assignment(text.slice(0, text.indexOf('=')), text.slice(text.indexOf('=') + 1), false);
    index += 1;
  }
  const rest = args.slice(index);
  if (rest.length === 0) return;
  if (context.name === 'cross-env') context.command(rest);
  else if (rest.some((word) => word.dynamic))
    context.hazard('a command for cross-env-shell computed at run time');
  else context.script(rest.map((word) => word.text).join(' '), 'the command given to cross-env-shell');
};

/** concurrently: each operand is a command string for a shell (`npm:NAME` runs a package script). */
export const concurrently: Handler = (context) => {
  const args = context.words.slice(1);
  if (args.some((word) => word.text.startsWith('-'))) {
    context.hazard('concurrently with options this policy does not read (some take the commands)');
    return;
  }
  for (const word of args) {
    if (/^(?:npm|yarn|pnpm|bun):/.test(word.text)) continue;
    context.script(word, 'a command given to concurrently');
  }
};

/** nodemon: `-x`/`--exec COMMAND` runs a command string instead of node. */
export const nodemon: Handler = (context) => {
  const args = context.words.slice(1);
  for (let index = 0; index < args.length; index += 1) {
    const text = args[index]!.text;
    if ((text === '-x' || text === '--exec') && args[index + 1]) {
      context.script(args[index + 1]!, 'the command given to nodemon --exec');
    } else if (text.startsWith('--exec=')) {
      context.script(
        { text: text.slice(7), dynamic: args[index]!.dynamic },
        'the command given to nodemon --exec',
      );
    }
  }
};

/** pip: `pip config set|unset|edit` writes pip's configuration. */
export const pip: Handler = (context) => {
  const args = context.words.slice(1).filter((word) => !word.text.startsWith('-'));
  if (args[0]?.text === 'config' && /^(?:set|unset|edit)$/.test(args[1]?.text ?? '')) {
    context.hazard(`${context.name} config ${args[1]!.text} (it writes pip's configuration)`);
  }
};

export const cargo: Handler = (context) => {
  for (const word of context.words.slice(1)) {
    if (/^--config(?:=|$)/.test(word.text)) {
      context.hazard('cargo --config (it can name programs cargo runs)');
      return;
    }
  }
};

export const go: Handler = (context) => {
  const args = context.words.slice(1);
  if (args[0]?.text === 'env' && args.some((word) => /^-{1,2}w$/.test(word.text))) {
    context.hazard('go env -w (it writes go configuration, such as GOFLAGS=-toolexec=...)');
    return;
  }
  for (const word of args) {
    if (/^-{1,2}(?:toolexec|exec|vettool)(?:=|$)/.test(word.text)) {
      context.hazard(`go ${word.text.split('=')[0]} (it runs a command)`);
      return;
    }
  }
};

export const cmake: Handler = (context) => {
  const args = context.words.slice(1);
  const at = args.findIndex((word) => word.text === '-E');
  if (at >= 0 && args[at + 1]) context.command(args.slice(at + 1));
  if (args.some((word) => word.text === '-P')) context.hazard('cmake -P (it runs a script)');
};
