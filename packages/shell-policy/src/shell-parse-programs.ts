// What common programs run besides themselves, for the shell parser: wrappers (`sudo`, `env`,
// `timeout`, `xargs`, ...) whose arguments are another command, programs with options or scripts
// that run a command string (`sed`'s `e`, `rg --pre`, `git -c`, `tar --to-command`,
// `ssh -o ProxyCommand`, `flock -c`, ...), shells and interpreters and where they read their
// program from, and the bash builtins that run strings or change later commands (`eval`, `source`,
// `alias`, `trap`, `hash -p`, `declare -n`, ...). Options are read the way getopt reads them
// (clusters, attached values, unambiguous abbreviations of long options); an option a wrapper does
// not know makes the wrapped command unknowable, so it is reported rather than guessed.

import { BUILTIN_HAZARDS } from './builtins.js';
import {
  ALWAYS_HAZARD,
  apt,
  compiler,
  databaseShell,
  downloadHooks,
  dpkg,
  emacs,
  hg,
  less,
  loader,
  make,
  man,
  netcat,
  programOption,
  rg,
  rsync,
  rustc,
  scpLike,
  socat,
  sqlite,
  ssh,
  tar,
  wget,
  zip,
} from './command-options.js';
import { git } from './git.js';
import type { Handler } from './options.js';
import {
  bunx,
  cargo,
  cmake,
  concurrently,
  crossEnv,
  go,
  mise,
  nix,
  nixShell,
  nodemon,
  npm,
  npx,
  pip,
  pnpm,
  rustup,
  subcommandRunner,
  uv,
  yarn,
} from './package-runners.js';
import { interpreter, interpreterSpecFor, OTHER_SHELLS, otherShell, POSIX_SHELLS, shell } from './shells.js';
import { awk, sed } from './text-programs.js';
import type { ProgramContext } from './types.js';
import { DOCUMENTED_WRAPPERS } from './wrapper-table.js';
import {
  capsh,
  ccache,
  coreutils,
  entr,
  env,
  fd,
  find,
  flock,
  hyperfine,
  multiCall,
  parallel,
  script,
  sg,
  startStopDaemon,
  su,
  sudo,
  watch,
  xargs,
} from './wrappers.js';

const HANDLERS: Record<string, Handler> = {
  ...BUILTIN_HAZARDS,
  ...DOCUMENTED_WRAPPERS,
  ccache,
  capsh,
  'start-stop-daemon': startStopDaemon,
  busybox: multiCall,
  toybox: multiCall,
  coreutils,
  sudo,
  su,
  runuser: su,
  env,
  xargs,
  find,
  fd,
  fdfind: fd,
  flock,
  script,
  watch,
  parallel,
  entr,
  hyperfine,
  sg,
  newgrp: (context) => context.hazard('newgrp starting a shell'),
  awk,
  gawk: awk,
  mawk: awk,
  nawk: awk,
  'original-awk': awk,
  sed,
  gsed: sed,
  git,
  tar,
  gtar: tar,
  bsdtar: tar,
  rg,
  zip,
  make,
  gmake: make,
  ssh,
  scp: scpLike,
  sftp: scpLike,
  rsync,
  npm,
  npx,
  pnpm,
  pnpx: npx,
  yarn,
  bunx,
  uv,
  uvx: uv,
  poetry: subcommandRunner('run', ['-P', '--project', '-C', '--directory']),
  pipenv: subcommandRunner('run', []),
  pdm: subcommandRunner('run', ['-p', '--project']),
  hatch: subcommandRunner('run', ['-e', '--env']),
  pixi: subcommandRunner('run', ['-e', '--environment', '--manifest-path']),
  rye: subcommandRunner('run', []),
  pipx: subcommandRunner('run', ['--spec', '--python']),
  conda: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  mamba: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  micromamba: subcommandRunner('run', ['-n', '--name', '-p', '--prefix']),
  cargo,
  go,
  cmake,
  sort: programOption(['compress-program'], 'program'),
  diff3: programOption(['diff-program'], 'program'),
  sdiff: programOption(['diff-program'], 'program'),
  split: programOption(['filter'], 'script'),
  wget,
  sqlite3: sqlite,
  aria2c: downloadHooks,
  'yt-dlp': downloadHooks,
  'youtube-dl': downloadHooks,
  rustc,
  hg,
  less,
  apt,
  'apt-get': apt,
  'apt-cache': apt,
  aptitude: apt,
  dpkg,
  nc: netcat,
  netcat,
  ncat: netcat,
  'nc.traditional': netcat,
  'nc.openbsd': netcat,
  socat,
  gcc: compiler,
  'g++': compiler,
  cc: compiler,
  'c++': compiler,
  clang: compiler,
  'clang++': compiler,
  rustup,
  mise,
  rtx: mise,
  'nix-shell': nixShell,
  nix,
  'cross-env': crossEnv,
  'cross-env-shell': crossEnv,
  concurrently,
  nodemon,
  pip,
  pip3: pip,
  bundle: subcommandRunner('exec', []),
  devbox: subcommandRunner('run', []),
  rbenv: subcommandRunner('exec', []),
  pyenv: subcommandRunner('exec', []),
  nodenv: subcommandRunner('exec', []),
  goenv: subcommandRunner('exec', []),
  jenv: subcommandRunner('exec', []),
  plenv: subcommandRunner('exec', []),
  asdf: subcommandRunner('exec', []),
  stack: subcommandRunner('exec', []),
  cabal: subcommandRunner('exec', []),
  opam: subcommandRunner('exec', []),
  lerna: subcommandRunner('exec', []),
  nx: subcommandRunner('exec', []),
  psql: databaseShell,
  mysql: databaseShell,
  mariadb: databaseShell,
  emacs,
  man,
};

const LOADER = /^ld(?:-linux[-\w.]*)?\.so(?:\.\d+)*$|^ld-[\w.-]+\.so(?:\.\d+)*$/;

/** Whether this module knows anything about what `name` runs (else it runs nothing else). */
export function hasProgramKnowledge(name: string): boolean {
  return (
    POSIX_SHELLS.has(name) ||
    OTHER_SHELLS.has(name) ||
    Object.hasOwn(ALWAYS_HAZARD, name) ||
    Object.hasOwn(HANDLERS, name) ||
    LOADER.test(name) ||
    interpreterSpecFor(name) !== undefined
  );
}

/** Looks at what the command's program runs besides itself, and reports it to the context. */
export function resolveProgram(context: ProgramContext): void {
  const { name } = context;
  const always = Object.hasOwn(ALWAYS_HAZARD, name) ? ALWAYS_HAZARD[name] : undefined;
  const handler: Handler | undefined = POSIX_SHELLS.has(name)
    ? shell
    : OTHER_SHELLS.has(name)
      ? otherShell
      : always
        ? (inner) => inner.hazard(always)
        : Object.hasOwn(HANDLERS, name)
          ? HANDLERS[name]
          : LOADER.test(name)
            ? loader
            : undefined;
  if (handler) {
    handler(context);
    return;
  }
  const interpreterSpec = interpreterSpecFor(name);
  if (interpreterSpec) interpreter(interpreterSpec)(context);
}
