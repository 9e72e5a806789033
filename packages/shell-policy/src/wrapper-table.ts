// Wrappers described by their documentation: each entry is a program's synopsis and its option
// list as its manual or `--help` gives them (the versions on Debian 12 where the program is
// installed there, its manual otherwise), and what particular options do — run a command string,
// name a program, set a variable for the command, name a start-up file. The generic handler reads
// the options the way the program does (getopt_long: clusters, attached values, unambiguous
// abbreviations), so the command is found where the program finds it; an option the list does not
// hold makes the command unknowable, and is reported rather than guessed. Wrappers with syntax of
// their own (`env -S`, `sudo`, `su`, `xargs`, `find -exec`, ...) are in wrappers.ts.

import { type Handler, type OptionSpec, optionList, scanOptions, unknownOption } from './options.js';
import type { ProgramContext, ShellWord } from './types.js';

/** What an option does besides its own setting. */
type OptionAction =
  /** Its value is a command string a shell runs (`flock -c`). */
  | 'script'
  /** Its value names a program it runs (`dbus-run-session --dbus-daemon`). */
  | 'program'
  /** Its value is `NAME=VALUE` (or `NAME`) in the command's environment (`strace -E`). */
  | 'assignment'
  /** Its words are `NAME VALUE` in the command's environment (`bwrap --setenv`). */
  | 'assignment-pair'
  /** Its value is an output file, or with a leading `|` or `!` a command (`strace -o`). */
  | 'output'
  /** Anything else it does that the policy cannot check: the reason, as a noun phrase. */
  | { hazard: string };

interface WrapperDefinition {
  /** The synopsis, from the program's manual or `--help`. */
  usage: string;
  /** The option list, in `optionList` form. */
  options: string;
  /** Unknown long options are taken as flags with attached values (`valgrind --tool=x`). */
  lenientLong?: boolean;
  /** A number is an option (`nice -5`). */
  numeric?: boolean;
  /** Words between the options and the command (`timeout DURATION`, `chroot NEWROOT`). */
  positional?: number;
  /** Without a command it starts a shell, or reads commands: the reason. */
  withoutCommand?: string;
  /** Options after which the remaining words are not a command (`taskset -p MASK PID`). */
  noCommandWith?: readonly string[];
  /** What particular options do, by every name they have. */
  actions?: Readonly<Record<string, OptionAction>>;
}

const GNU_HELP = '--help --version';
const UTIL_LINUX_HELP = '-h --help -V --version';

/** The namespaces util-linux's unshare and nsenter take, each with an optional file. */
const NAMESPACES =
  '-m[=] --mount[=] -u[=] --uts[=] -i[=] --ipc[=] -n[=] --net[=] -p[=] --pid[=] -U[=] --user[=] -C[=] --cgroup[=] -T[=] --time[=]';

const STRACE_OPTIONS = [
  '-A -C -c -D -d -F -f -h -i -k -n -q -r -T -t -V -v -w -x -Y -y -Z -z',
  '-a= -b= -e= -E= -I= -O= -o= -P= -p= -S= -s= -U= -u= -X=',
  '--abbrev= --absolute-timestamps[=] --always-show-pid --argv0= --attach= --columns= --const-print-style=',
  '--daemonize[=] --debug --decode-fds[=] --decode-pids= --detach-on= --env= --failed-only --fault=',
  '--follow-forks --help --inject= --instruction-pointer --interruptible= --kill-on-exit --kvm= --no-abbrev',
  '--output= --output-append-mode --output-separately --quiet[=] --raw= --read= --relative-timestamps[=]',
  '--seccomp-bpf --secontext[=] --signal= --stack-traces --status= --string-limit= --strings-in-hex[=]',
  '--successful-only --summary --summary-columns= --summary-only --summary-sort-by=',
  '--summary-syscall-overhead= --summary-wall-clock --syscall-number --syscall-times[=] --timestamps[=]',
  '--tips[=] --trace= --trace-path= --user= --verbose= --version --write=',
].join(' ');

const LIMITS = 'c d e f i l m n q r s t u v x y'
  .split(' ')
  .map((letter) => `-${letter}[=]`)
  .join(' ');
const LIMIT_NAMES =
  '--core[=] --data[=] --nice[=] --fsize[=] --sigpending[=] --memlock[=] --rss[=] --nofile[=] --msgqueue[=] --rtprio[=] --stack[=] --cpu[=] --nproc[=] --as[=] --locks[=] --rttime[=]';

/** Each wrapper, by the names it is installed under. */
const WRAPPERS: Record<string, WrapperDefinition> = {
  // bash builtins
  exec: { usage: 'exec [-cl] [-a name] [command [argument ...]]', options: '-c -l -a=' },
  command: {
    usage: 'command [-pVv] command [arg ...]',
    options: '-p -v -V',
    noCommandWith: ['-v', '-V'],
  },
  builtin: { usage: 'builtin [shell-builtin [args]]', options: '' },
  // coreutils
  nohup: { usage: 'nohup COMMAND [ARG]...', options: GNU_HELP },
  nice: {
    usage: 'nice [OPTION] [COMMAND [ARG]...]',
    options: `-n= --adjustment= ${GNU_HELP}`,
    numeric: true,
  },
  stdbuf: {
    usage: 'stdbuf OPTION... COMMAND',
    options: `-i= --input= -o= --output= -e= --error= ${GNU_HELP}`,
  },
  timeout: {
    usage: 'timeout [OPTION] DURATION COMMAND [ARG]...',
    options: `-s= --signal= -k= --kill-after= -v --verbose --preserve-status --foreground ${GNU_HELP}`,
    positional: 1,
  },
  chroot: {
    usage: 'chroot [OPTION]... NEWROOT [COMMAND [ARG]...]',
    options: `--groups= --userspec= --skip-chdir ${GNU_HELP}`,
    positional: 1,
    withoutCommand: 'chroot starting a shell',
  },
  time: {
    usage: 'time [OPTIONS] COMMAND [ARG]... (GNU time)',
    options:
      '-a --append -f= --format= -o= --output= -p --portability -q --quiet -v --verbose -h --help -V --version',
  },
  // util-linux
  setsid: {
    usage: 'setsid [options] <program> [arguments ...]',
    options: `-c --ctty -f --fork -w --wait ${UTIL_LINUX_HELP}`,
  },
  ionice: {
    usage: 'ionice [-c class] [-n level] [-t] COMMAND [ARG]... | -p PID...',
    options: `-c= --class= -n= --classdata= -p= --pid= -P= --pgid= -t --ignore -u= --uid= ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-p', '--pid', '-P', '--pgid', '-u', '--uid'],
  },
  taskset: {
    usage: 'taskset [options] mask command [argument...] | -p [mask] pid',
    options: `-a --all-tasks -p --pid -c --cpu-list ${UTIL_LINUX_HELP}`,
    positional: 1,
    noCommandWith: ['-p', '--pid'],
  },
  chrt: {
    usage: 'chrt [options] priority command [argument...] | -p [priority] pid',
    options: `-b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr -R --reset-on-fork -T= --sched-runtime= -P= --sched-period= -D= --sched-deadline= -a --all-tasks -m --max -p --pid -v --verbose ${UTIL_LINUX_HELP}`,
    positional: 1,
    noCommandWith: ['-p', '--pid', '-m', '--max'],
  },
  prlimit: {
    usage: 'prlimit [options] [--resource=limits] [-p PID | command [argument...]]',
    options: `-p= --pid= -o= --output= --noheadings --raw --verbose ${LIMITS} ${LIMIT_NAMES} ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-p', '--pid'],
  },
  unshare: {
    usage: 'unshare [options] [program [argument...]]',
    options: `${NAMESPACES} -f --fork --map-user= --map-group= -r --map-root-user -c --map-current-user --map-auto --map-users= --map-groups= --kill-child[=] --mount-proc[=] --mount-binfmt[=] --propagation= --setgroups= --keep-caps -R= --root= -w= --wd= -S= --setuid= -G= --setgid= --monotonic= --boottime= ${UTIL_LINUX_HELP}`,
    withoutCommand: 'unshare starting a shell',
  },
  nsenter: {
    usage: 'nsenter [options] [program [argument...]]',
    options: `-a --all -t= --target= ${NAMESPACES} -S= --setuid= -G= --setgid= --preserve-credentials -r[=] --root[=] -w[=] --wd[=] -W= --wdns= -e --env -F --no-fork -Z --follow-context ${UTIL_LINUX_HELP}`,
    withoutCommand: 'nsenter starting a shell',
  },
  setpriv: {
    usage: 'setpriv [options] program [argument...]',
    options: `-d --dump --nnp --no-new-privs --ambient-caps= --inh-caps= --bounding-set= --ruid= --euid= --rgid= --egid= --reuid= --regid= --clear-groups --keep-groups --init-groups --groups= --securebits= --pdeathsig= --selinux-label= --apparmor-profile= --landlock-access= --landlock-rule= --seccomp-filter= --ptracer= --reset-env --list-caps ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-d', '--dump', '--list-caps'],
  },
  choom: {
    usage: 'choom [options] -n number [--] command [args...]',
    options: `-n= --adjust= -p= --pid= ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-p', '--pid'],
  },
  uclampset: {
    usage: 'uclampset [options] --pid <pid> | --system | <command> <arg>...',
    options: `-m= -M= -a --all-tasks -p= --pid= -s --system -R --reset-on-fork -v --verbose ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-p', '--pid', '-s', '--system'],
  },
  setpgid: {
    usage: 'setpgid [options] <program> [<argument>...]',
    options: `-f --foreground ${UTIL_LINUX_HELP}`,
  },
  enosys: {
    usage: 'enosys [options] [--] command [argument...]',
    options: `-s= --syscall= -i= --ioctl= -l --list -m --list-ioctl -d --dump ${UTIL_LINUX_HELP}`,
    noCommandWith: ['-l', '--list', '-m', '--list-ioctl', '-d', '--dump'],
  },
  pipesz: {
    usage: 'pipesz [options] [--] [command [argument...]]',
    options: `-g --get -s= --set= -f= --file= -n= --fd= -i --stdin -o --stdout -e --stderr -c --check -q --quiet -v --verbose ${UTIL_LINUX_HELP}`,
  },
  // Tracing and profiling.
  strace: {
    usage: 'strace [options] { -p PID | [-E VAR=VAL]... [-u USERNAME] PROG [ARGS] }',
    options: STRACE_OPTIONS,
    actions: {
      '-o': 'output',
      '--output': 'output',
      '-E': 'assignment',
      '--env': 'assignment',
    },
  },
  ltrace: {
    usage: 'ltrace [options] [command [arg ...]] | -p pid',
    options:
      '-a= --align= -A= -b --no-signals -c -C --demangle -D= --debug= -e= -f -F= --config= -h --help -i -l= --library= -L -n= --indent= -o= --output= -p= -r -s= -S -t -T -u= -V --version -w= --where= -x=',
  },
  valgrind: {
    usage: 'valgrind [valgrind-options] [your-program] [your-program-options]',
    options: '-h --help -q --quiet -v --verbose -d --version',
    // Its options are always written --name=value.
    lenientLong: true,
  },
  catchsegv: { usage: 'catchsegv program [args]', options: '' },
  // Other privilege, scheduling and environment wrappers.
  doas: {
    usage: 'doas [-Lns] [-C config] [-u user] command [args]',
    options: '-L -n -s -C= -u=',
    withoutCommand: 'doas starting a shell',
    noCommandWith: ['-C', '-L'],
  },
  pkexec: {
    usage: 'pkexec [--user username] [--disable-internal-agent] [--keep-cwd] [PROGRAM [ARGUMENTS...]]',
    options: `--user= --disable-internal-agent --keep-cwd ${GNU_HELP}`,
    withoutCommand: 'pkexec starting a shell',
  },
  numactl: {
    usage: 'numactl [options] [--] command [arguments...]',
    options:
      '-a --all -i= --interleave= -w= --weighted-interleave= -p= --preferred= -P= --preferred-many= -b --balancing -m= --membind= -N= --cpunodebind= -C= --physcpubind= -c= --cpubind= -l --localalloc -s --show -H --hardware -u --huge -o= --offset= -M= --shmmode= -L= --length= -t --strict -I= --shmid= -S= --shm= -f= --file= -T --touch -d --dump -D --dump-nodes -V --version -h --help',
    noCommandWith: ['-s', '--show', '-H', '--hardware'],
  },
  tini: {
    usage: 'tini [OPTIONS] PROGRAM -- [ARGS] | --version',
    options: '-h -s -p= -v -w -g -e= -l --version',
  },
  'dumb-init': {
    usage: 'dumb-init [option...] command [[arg] ...]',
    options: '-c --single-child -r= --rewrite= -v --verbose -V --version -h --help',
  },
  gosu: { usage: 'gosu user-spec command [args]', options: '', positional: 1 },
  'su-exec': { usage: 'su-exec user-spec command [args]', options: '', positional: 1 },
  setuidgid: { usage: 'setuidgid account child', options: '', positional: 1 },
  envuidgid: { usage: 'envuidgid account child', options: '', positional: 1 },
  pgrphack: { usage: 'pgrphack child', options: '' },
  fghack: { usage: 'fghack child', options: '' },
  softlimit: {
    usage: 'softlimit opts child',
    options: '-m= -a= -d= -s= -l= -f= -c= -o= -p= -t= -r=',
  },
  setlock: { usage: 'setlock [-nNxX] file child', options: '-n -N -x -X', positional: 1 },
  chpst: {
    usage:
      'chpst [-vP012] [-u user] [-U user] [-b argv0] [-e dir] [-/ root] [-n inc] [-l|-L lock] [-m bytes] [-d bytes] [-o n] [-p n] [-f bytes] [-c bytes] prog',
    options: '-v -P -0 -1 -2 -u= -U= -b= -e= -/= -C= -n= -l= -L= -m= -d= -o= -p= -f= -c= -r= -t=',
    actions: { '-e': { hazard: 'chpst -e (it sets variables from the files of a directory)' } },
  },
  daemonize: {
    usage:
      'daemonize [-a] [-c directory] [-e stderr] [-o stdout] [-p pidfile] [-l lockfile] [-u user] [-v] [-E name=value] path [arg] ...',
    options: '-a -v -c= -e= -o= -p= -l= -u= -E=',
    actions: { '-E': 'assignment' },
  },
  'ssh-agent': {
    usage:
      'ssh-agent [-a bind_address] [-E fingerprint_hash] [-O option] [-P allowed_providers] [-t life] command [arg ...]',
    options: '-c -s -D -d -k -a= -E= -O= -P= -t=',
    noCommandWith: ['-k'],
  },
  'dbus-run-session': {
    usage: 'dbus-run-session [--config-file FILENAME] [--dbus-daemon BINARY] [--] PROGRAM [ARGUMENTS...]',
    options: `--config-file= --dbus-daemon= ${GNU_HELP}`,
    actions: { '--dbus-daemon': 'program' },
  },
  'dbus-launch': {
    usage: 'dbus-launch [options] [PROGRAM] [ARGS...]',
    options: `--sh-syntax --csh-syntax --auto-syntax --binary-syntax --close-stderr --exit-with-session --exit-with-x11 --autolaunch= --config-file= ${GNU_HELP}`,
  },
  'xvfb-run': {
    usage: 'xvfb-run [options] command',
    options:
      '-a --auto-servernum -d --auto-display -e= --error-file= -f= --auth-file= -h --help -l --listen-tcp -n= --server-num= -p= --xauth-protocol= -s= --server-args= -w= --wait=',
  },
  fakeroot: {
    usage:
      'fakeroot [-l|--lib library] [--faked faked-binary] [-i load-file] [-s save-file] [-u|--unknown-is-real] [-b|--fd-base] [-h|--help] [-v|--version] [--] [command]',
    options: '-l= --lib= --faked= -i= -s= -u --unknown-is-real -b= --fd-base= -h --help -v --version',
    actions: {
      '-l': { hazard: 'fakeroot loading a library of its own (-l)' },
      '--lib': { hazard: 'fakeroot loading a library of its own (--lib)' },
      '--faked': 'program',
    },
    withoutCommand: 'fakeroot starting a shell',
  },
  fakechroot: {
    usage: 'fakechroot [-s] [-l library] [-d ldso] [-e type] [-c directory] [-b directory] [--] [command]',
    options:
      '-s --use-system-libs -l= --lib= -d= --elfloader= -e= --environment= -c= --config-dir= -b= --bindir= -h --help -v --version',
    actions: {
      '-l': { hazard: 'fakechroot loading a library (-l)' },
      '--lib': { hazard: 'fakechroot loading a library (--lib)' },
      '-d': 'program',
      '--elfloader': 'program',
      '-c': { hazard: 'fakechroot reading a configuration directory (-c)' },
      '--config-dir': { hazard: 'fakechroot reading a configuration directory (--config-dir)' },
    },
    withoutCommand: 'fakechroot starting a shell',
  },
  faketime: {
    usage: 'faketime [options] timestamp program [arguments...]',
    options: '-m -f -p= --exclude-monotonic --disable-shm --date-prog= -h --help -v --version',
    positional: 1,
    actions: { '--date-prog': 'program' },
  },
  eatmydata: { usage: 'eatmydata [--] command [args]', options: '' },
  nocache: { usage: 'nocache [-n <n>] command [args]', options: '-n=' },
  unbuffer: { usage: 'unbuffer [-p] program [args]', options: '-p' },
  caffeinate: {
    usage: 'caffeinate [-disu] [-t timeout] [-w pid] [utility [arguments]]',
    options: '-d -i -m -s -u -t= -w=',
  },
  proxychains: { usage: 'proxychains [-q] [-f config] program [arguments]', options: '-q -f=' },
  proxychains4: { usage: 'proxychains4 [-q] [-f config] program [arguments]', options: '-q -f=' },
  torsocks: {
    usage: 'torsocks [options] command [arguments]',
    options:
      '-u= --user= -p= --pass= -a= --address= -P= --port= -i --isolate -d --debug -q --quiet -6 --ipv6 -h --help --version',
  },
  torify: { usage: 'torify command [arguments] (torsocks)', options: '' },
  tsocks: { usage: 'tsocks [program [arguments]]', options: '' },
  trickle: {
    usage:
      'trickle [-hvVs] [-w length] [-t seconds] [-l length] [-n path] [-d rate] [-u rate] [-L ms] [-P path] command ...',
    options: '-h -v -V -s -w= -t= -l= -n= -d= -u= -L= -P=',
  },
  cpulimit: {
    usage: 'cpulimit [OPTIONS...] -- COMMAND [ARGS...]',
    options:
      '-l= --limit= -p= --pid= -e= --exe= -P= --path= -z --lazy -i --include-children -b --background -q --quiet -v --verbose -k --kill -r --restore -m --monitor-forks -s= --signal= -c= --cpu= -h --help',
    noCommandWith: ['-p', '--pid', '-e', '--exe', '-P', '--path'],
  },
  cgexec: {
    usage: 'cgexec [-h] [-g <controllers>:<path>] [--sticky] command [arguments]',
    options: '-h -g= --sticky',
  },
  'systemd-inhibit': {
    usage: 'systemd-inhibit [OPTIONS...] [COMMAND] [ARGUMENTS...]',
    options: `--what= --who= --why= --mode= --list --no-pager --no-legend -h ${GNU_HELP}`,
  },
  timelimit: {
    usage: 'timelimit [-pq] [-S killsig] [-s warnsig] [-T killtime] [-t warntime] command [arguments ...]',
    options: '-p -q -S= -s= -T= -t=',
  },
  sshpass: {
    usage: 'sshpass [-f filename|-d num|-p password|-e[env_var]] [-hV] [-P prompt] [-v] command arguments',
    options: '-f= -d= -p= -e[=] -h -V -P= -v',
  },
  'run-one': { usage: 'run-one COMMAND [ARGS]', options: '' },
  'run-this-one': { usage: 'run-this-one COMMAND [ARGS]', options: '' },
  'keep-one-running': { usage: 'keep-one-running COMMAND [ARGS]', options: '' },
  'run-one-constantly': { usage: 'run-one-constantly COMMAND [ARGS]', options: '' },
  'run-one-until-success': { usage: 'run-one-until-success COMMAND [ARGS]', options: '' },
  'run-one-until-failure': { usage: 'run-one-until-failure COMMAND [ARGS]', options: '' },
  // moreutils
  chronic: { usage: 'chronic [-ev] COMMAND...', options: '-e -v' },
  ifne: { usage: 'ifne [-n] command', options: '-n' },
  lckdo: {
    usage: 'lckdo [options] lockfile program [arguments]',
    options: '-w -W= -q -s -x -n -E=',
    positional: 1,
  },
  zrun: { usage: 'zrun command file.gz [...]', options: '' },
  rlwrap: {
    usage: 'rlwrap [options] command ...',
    options:
      '-a[=] -b= -c -C= -D= -e= -f= -g= -h -H= -i -I -l= -m[=] -M= -n -N -o -O= -p[=] -P= -q= -r -R -s= -S= -t= -U -v -w= -W -X -z=',
    actions: { '-z': 'program' },
  },
  bwrap: {
    usage: 'bwrap [OPTION...] [COMMAND]',
    options: [
      `--help --version --level-prefix --unshare-user --unshare-user-try --unshare-ipc --unshare-pid --unshare-net`,
      `--unshare-uts --unshare-cgroup --unshare-cgroup-try --unshare-all --share-net --clearenv --new-session`,
      `--die-with-parent --as-pid-1 --disable-userns --assert-userns-disabled`,
      `--args= --argv0= --userns= --userns2= --pidns= --uid= --gid= --hostname= --chdir= --unsetenv= --lock-file=`,
      `--sync-fd= --remount-ro= --exec-label= --file-label= --proc= --dev= --tmpfs= --mqueue= --dir= --perms= --size=`,
      `--seccomp= --add-seccomp-fd= --block-fd= --userns-block-fd= --info-fd= --json-status-fd= --cap-add= --cap-drop=`,
      `--overlay-src= --tmp-overlay= --ro-overlay=`,
      `--setenv=2 --bind=2 --bind-try=2 --dev-bind=2 --dev-bind-try=2 --ro-bind=2 --ro-bind-try=2 --bind-fd=2`,
      `--ro-bind-fd=2 --file=2 --bind-data=2 --ro-bind-data=2 --symlink=2 --chmod=2 --overlay=3`,
    ].join(' '),
    actions: {
      '--setenv': 'assignment-pair',
      '--args': { hazard: 'bwrap --args (it reads more arguments from a file descriptor)' },
    },
  },
  firejail: {
    usage: 'firejail [OPTIONS] [program and arguments]',
    options: '--help --version',
    lenientLong: true,
    withoutCommand: 'firejail starting a shell',
  },
  proot: {
    usage: 'proot [option] ... [command]',
    options:
      '-r= --rootfs= -b= --bind= --mount= -q= --qemu= -w= --pwd= --cwd= -k= --kernel-release= -0 --root-id -i= --change-id= -p= --port= -n --netcoop -R= -S= -L --link2symlink -v= --verbose= -V --version -h --help --usage',
    actions: { '-q': 'script', '--qemu': 'script' },
    withoutCommand: 'proot starting a shell',
  },
};

/** setarch's personality names, under which util-linux installs it as a link. */
const SETARCH_NAMES = new Set(
  'linux32 linux64 i386 i486 i586 i686 x86_64 ia64 ppc ppc32 ppc64 ppc64le s390 s390x sparc sparc32 sparc32bash sparc64 mips mips32 mips64 parisc parisc32 parisc64 alpha arm armh arm64 aarch64 uname26'.split(
    ' ',
  ),
);

const SETARCH: WrapperDefinition = {
  usage: 'setarch [arch] [options] [program [argument...]] (also installed as linux32, linux64, x86_64, ...)',
  options: `-B --32bit -F --fdpic-funcptrs -I --short-inode -L --addr-compat-layout -R --addr-no-randomize -S --whole-seconds -T --sticky-timeouts -X --read-implies-exec -Z --mmap-page-zero -3 --3gb --4gb --uname-2.6 -v --verbose --list --show[=] ${UTIL_LINUX_HELP}`,
  withoutCommand: 'setarch starting a shell',
  noCommandWith: ['--list', '--show'],
};

const specs = new Map<WrapperDefinition, OptionSpec>();

function specOf(definition: WrapperDefinition): OptionSpec {
  let spec = specs.get(definition);
  if (!spec) {
    spec = optionList(definition.options, {
      ...(definition.lenientLong ? { lenientLong: true } : {}),
      ...(definition.numeric ? { numeric: true } : {}),
    });
    specs.set(definition, spec);
  }
  return spec;
}

function applyAction(context: ProgramContext, name: string, action: OptionAction, words: ShellWord[]): void {
  const value = words[0];
  if (typeof action === 'object') {
    context.hazard(action.hazard);
    return;
  }
  if (!value) return;
  switch (action) {
    case 'script':
      context.script(value, `the command given to ${context.name} ${name}`);
      return;
    case 'program':
      context.command([value], { stdin: { kind: 'closed' } });
      return;
    case 'assignment': {
      if (value.dynamic) {
        context.hazard(`${context.name} ${name} with a variable computed at run time`);
        return;
      }
      const equals = value.text.indexOf('=');
      if (equals > 0) context.assignment(value.text.slice(0, equals), value.text.slice(equals + 1), false);
      return;
    }
    case 'assignment-pair':
      if (value.dynamic || words[1]?.dynamic) {
        context.hazard(`${context.name} ${name} with a variable computed at run time`);
        return;
      }
      context.assignment(value.text, words[1]?.text ?? '', false);
      return;
    case 'output':
      if (value.dynamic)
        context.hazard(`${context.name} ${name} with a file computed at run time (|cmd runs cmd)`);
      else if (value.text.startsWith('|') || value.text.startsWith('!')) {
        context.script(value.text.slice(1), `the command ${context.name} ${name} pipes its output to`);
      }
      return;
  }
}

function runWrapper(context: ProgramContext, definition: WrapperDefinition, start: number): void {
  const scan = scanOptions(context.words, start, specOf(definition));
  if (scan.unknown) {
    unknownOption(context, scan.unknown);
    return;
  }
  for (const option of scan.options) {
    const action = definition.actions?.[option.name];
    if (action)
      applyAction(context, option.name, action, option.values ?? (option.value ? [option.value] : []));
  }
  if (
    definition.noCommandWith &&
    scan.options.some((option) => definition.noCommandWith!.includes(option.name))
  ) {
    return;
  }
  const commandStart = scan.end + (definition.positional ?? 0);
  if (commandStart < context.words.length) context.command(context.words.slice(commandStart));
  else if (definition.withoutCommand) context.hazard(definition.withoutCommand);
}

const setarch: Handler = (context) => {
  // `setarch ARCH [options] ...`; under a personality's name the arch is the name itself.
  const first = context.words[1];
  const start = context.name === 'setarch' && first && !first.text.startsWith('-') ? 2 : 1;
  runWrapper(context, SETARCH, start);
};

/** Handlers for every documented wrapper, by program name. */
export const DOCUMENTED_WRAPPERS: Record<string, Handler> = Object.fromEntries([
  ...Object.entries(WRAPPERS).map(([name, definition]): [string, Handler] => [
    name,
    (context) => runWrapper(context, definition, 1),
  ]),
  ['setarch', setarch],
  ...[...SETARCH_NAMES].map((name): [string, Handler] => [name, setarch]),
]);
