// Shells and interpreters: where they read their program from (a `-c` string, a file, a pipe, a
// here-document), which shells' syntax can be parsed here, and interpreter options that run code.

import { type Handler, HELP, has, type OptionSpec, scanOptions, valuesOf } from './options.js';
import type { ProgramContext } from './types.js';

export const POSIX_SHELLS = new Set([
  'sh',
  'bash',
  'dash',
  'ash',
  'ksh',
  'ksh93',
  'mksh',
  'lksh',
  'pdksh',
  'oksh',
  'loksh',
  'yash',
  'posh',
  'rbash',
  'hush',
]);
/** Shells whose syntax is not bash's: what they run cannot be parsed here. */
export const OTHER_SHELLS = new Set([
  'zsh',
  'fish',
  'csh',
  'tcsh',
  'elvish',
  'nu',
  'xonsh',
  'pwsh',
  'powershell',
  'rc',
  'es',
]);

export const STDIN_PATH = /^(?:-|\/dev\/stdin|\/dev\/fd\/\d+|\/proc\/(?:self|\d+|thread-self)\/fd\/\d+)$/;

export function readsStdin(context: ProgramContext, what: string, parseShell: boolean): void {
  const { stdin } = context;
  if (parseShell && stdin.kind === 'text' && stdin.literal) {
    context.script(stdin.text, `the script given to ${context.name}`);
    return;
  }
  const from =
    stdin.kind === 'text'
      ? stdin.literal
        ? 'a here-document'
        : 'a here-document that expands'
      : stdin.kind === 'pipe'
        ? 'a pipe'
        : stdin.kind === 'file'
          ? 'a file'
          : 'standard input';
  context.hazard(`${context.name} reading ${what} from ${from}`);
}

const shellSpec: OptionSpec = {
  shortValue: 'oO',
  plus: true,
  long: {
    norc: 'flag',
    noprofile: 'flag',
    login: 'flag',
    posix: 'flag',
    restricted: 'flag',
    verbose: 'flag',
    debugger: 'flag',
    'dump-strings': 'flag',
    'dump-po-strings': 'flag',
    noediting: 'flag',
    protected: 'flag',
    rcfile: 'value',
    'init-file': 'value',
    ...HELP,
  },
  lenientLong: true,
};

export const shell: Handler = (context) => {
  const scan = scanOptions(context.words, 1, shellSpec);
  const letters = scan.options
    .filter((option) => /^[-+][a-zA-Z]$/.test(option.name))
    .map((option) => option.name);
  const first = context.words[scan.end];
  // Start-up files: --rcfile/--init-file name one an interactive shell runs, -i makes it run
  // ~/.bashrc (or the one named), --debugger runs the debugger's profile. Their commands are not
  // read here, like a script file's, but unlike a script they run before what the line shows.
  for (const option of scan.options) {
    if (option.name === '--rcfile' || option.name === '--init-file' || option.name === '--debugger') {
      context.hazard(`${context.name} ${option.name} (it runs a start-up file this policy does not read)`);
    }
  }
  if (letters.includes('-i') && letters.includes('-c')) {
    context.hazard(`an interactive ${context.name} -i (it runs its start-up file first)`);
  }
  if (letters.includes('-c')) {
    // Without a script word, what follows supplies it: xargs's input (`| xargs sh -c`).
    if (first) context.script(first, `the script given to ${context.name} -c`);
    else context.hazard(`${context.name} -c without a script word (what follows it supplies the script)`);
    return;
  }
  if (letters.includes('-i')) {
    context.hazard(`an interactive ${context.name} (it reads commands from its input)`);
    return;
  }
  if (letters.includes('-s') || !first) {
    readsStdin(context, 'its script', true);
    return;
  }
  if (first.processSubstitution || STDIN_PATH.test(first.text)) {
    context.hazard(`${context.name} reading its script from a pipe`);
  }
  // A script file: its commands are not read (see the README).
};

export const otherShell: Handler = (context) => {
  const args = context.words.slice(1);
  const script = args.find((word) => !word.text.startsWith('-'));
  const runsCode = args.some((word) => /^-(?:c|command|e|ec|encodedcommand|i|s)$/i.test(word.text));
  if (runsCode || !script || script.processSubstitution || STDIN_PATH.test(script.text)) {
    context.hazard(`${context.name} running commands (its syntax is not bash's, so they cannot be checked)`);
  }
};

interface InterpreterSpec {
  options: OptionSpec;
  /** Options whose value is program text. */
  code: string[];
  /** Options whose value names a module or file to run. */
  file?: string[];
  /** Options that make it read its input as a program after the rest. */
  interactive?: string[];
  /** Options that load native code or configuration the program runs. */
  loads?: string[];
  /**
   * Calls in its program text that run other programs or evaluate text as code, from the
   * language's library reference: literal program text that names one is refused like awk's
   * `system()`, since what it runs cannot be checked (a screen of names: code that builds the
   * name at run time gets past it, and the README says so).
   */
  runs?: RegExp;
  /** Options whose values name modules to load (`perl -MIPC::Open3`, `ruby -ropen3`). */
  modules?: string[];
  /** Modules among those that run programs. */
  moduleRuns?: RegExp;
}

const PYTHON_RUNS =
  /subprocess|\bos\s*\.\s*(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*|fork\w*)\b|(?<!platform)\.\s*(?:system|popen)\s*\(|(?<![\w.])(?:system|popen|exec[lv]\w*|spawn[lv]\w*|posix_spawnp?|fork|forkpty)\s*\(|\bpty\s*\.\s*spawn|\bctypes\b|\bcffi\b|__import__|\bimportlib\s*\.\s*(?:import_module|util|machinery)|\brunpy\b|\bcode\s*\.\s*interact|(?<![\w.])(?:exec|eval|compile|breakpoint)\s*\(|\bgetattr\s*\(\s*(?:os|subprocess|pty|posix|builtins|__builtins__)\b/;
const R_RUNS = /\b(?:system|system2|shell|pipe|eval|parse|dyn\.load)\s*\(|\bprocessx\b|\bsys::|\bcallr\b/;
const JAVASCRIPT_RUNS =
  /child_process|\b(?:execSync|execFileSync|spawnSync|execFile|spawn|fork)\s*\(|(?<![\w.])exec\s*\(|process\s*\.\s*(?:binding|dlopen|_linkedBinding)|\beval\s*\(|\bFunction\s*\(|\bvm\s*\.|\bimport\s*\(|\brequire\s*\(\s*[^'"`\s]|\bDeno\s*\.\s*(?:run|Command)\b|\bBun\s*\.\s*(?:spawn|spawnSync|\$)/;

const INTERPRETERS: Record<string, InterpreterSpec> = {
  python: {
    options: {
      shortValue: 'cmWX',
      long: { 'check-hash-based-pycs': 'value', ...HELP },
      lenientLong: true,
    },
    code: ['-c'],
    file: ['-m'],
    interactive: ['-i'],
    runs: PYTHON_RUNS,
  },
  perl: {
    options: { shortValue: 'eEI', shortOptional: 'ilx0dDCMmFV' },
    code: ['-e', '-E'],
    runs: /(?<![\w/"'$@%&>:-])(?:system|exec|readpipe|fork|syscall|eval)\b(?=\s*[({"'$@`\w])|`|\bqx\s*[^\w\s]|\bopen\s*\(?[^;]*\||\bIPC::/,
    modules: ['-M', '-m'],
    moduleRuns: /^-?(?:IPC::|Shell\b|Expect\b|Proc::|System::|Sys::)/,
  },
  ruby: {
    options: { shortValue: 'erICEF', shortOptional: 'xW0lK', lenientLong: true },
    code: ['-e'],
    runs: /(?<![\w/"'.:-])(?:system|exec|spawn|fork|syscall|eval|instance_eval|class_eval|module_eval|send|public_send|__send__)\b(?=\s*[({"'$@`\w])|`|%x|\bIO\s*\.\s*popen|\bOpen3\b|\bPTY\b|\bProcess\s*\.\s*spawn|\bKernel\s*\.|\bopen\s*\(?\s*["']\|/,
    modules: ['-r'],
    moduleRuns: /^(?:open3|pty|shell)$/,
  },
  node: {
    options: {
      shortValue: 'eprC',
      long: {
        eval: 'value',
        print: 'value',
        require: 'value',
        import: 'value',
        loader: 'value',
        'experimental-loader': 'value',
        conditions: 'value',
        'input-type': 'value',
        'env-file': 'value',
        title: 'value',
        interactive: 'flag',
        ...HELP,
      },
      lenientLong: true,
    },
    code: ['-e', '--eval', '-p', '--print'],
    interactive: ['-i', '--interactive'],
    runs: JAVASCRIPT_RUNS,
  },
  php: {
    options: { shortValue: 'rBREfFcdzt', lenientLong: true },
    code: ['-r', '-B', '-R', '-E'],
    file: ['-f', '-F'],
    interactive: ['-a'],
    runs: /(?<![\w/"'$>-])(?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|eval|assert|create_function|call_user_func\w*|mail|putenv|dl)\s*\(|`/,
  },
  lua: {
    options: { shortValue: 'el' },
    code: ['-e'],
    interactive: ['-i'],
    runs: /\bos\s*\.\s*execute|\bio\s*\.\s*popen|\b(?:load|loadstring|dofile|loadfile)\s*\(|\bpackage\s*\.\s*loadlib/,
  },
  Rscript: { options: { shortValue: 'e', lenientLong: true }, code: ['-e'], runs: R_RUNS },
  R: {
    options: { shortValue: 'ef', long: { file: 'value', ...HELP }, lenientLong: true },
    code: ['-e'],
    file: ['-f', '--file'],
    runs: R_RUNS,
  },
  julia: {
    options: { shortValue: 'eEL', lenientLong: true },
    code: ['-e', '-E'],
    file: ['-L'],
    runs: /\b(?:run|pipeline|eval|ccall|spawn)\s*\(|`|\bMeta\s*\.\s*parse|@eval/,
  },
  osascript: { options: { shortValue: 'el' }, code: ['-e'], runs: /do\s+shell\s+script/i },
  tclsh: { options: { lenientLong: true }, code: [] },
  wish: { options: { lenientLong: true }, code: [] },
  expect: {
    options: { shortValue: 'cfD' },
    code: ['-c'],
    file: ['-f'],
    interactive: ['-i'],
    runs: /\b(?:exec|spawn|system|eval|open)\b/,
  },
  jshell: { options: { lenientLong: true }, code: [] },
  irb: { options: { lenientLong: true }, code: [] },
  ghci: {
    options: { lenientLong: true },
    code: ['-e'],
    runs: /System\.Process|\bcallCommand\b|\brawSystem\b|\bsystem\b|:!/,
  },
  deno: { options: { lenientLong: true }, code: [] },
  bun: {
    options: { shortValue: 'ep', long: { eval: 'value', print: 'value' }, lenientLong: true },
    code: ['-e', '-p', '--eval', '--print'],
    runs: JAVASCRIPT_RUNS,
  },
};

export function interpreterSpecFor(name: string): InterpreterSpec | undefined {
  if (/^(?:python|pypy)[0-9.]*$/.test(name)) return INTERPRETERS.python;
  if (/^perl[0-9.]*$/.test(name)) return INTERPRETERS.perl;
  if (/^ruby[0-9.]*$/.test(name)) return INTERPRETERS.ruby;
  if (name === 'node' || name === 'nodejs') return INTERPRETERS.node;
  if (/^php[0-9.]*$/.test(name)) return INTERPRETERS.php;
  if (/^lua(?:jit|[0-9.]*)$/.test(name)) return INTERPRETERS.lua;
  return Object.hasOwn(INTERPRETERS, name) ? INTERPRETERS[name] : undefined;
}

/**
 * An interpreter: literal program text (`python -c '...'`) and script files are not read (the
 * README says so); program text computed at run time or read from standard input is reported.
 */
export function interpreter(spec: InterpreterSpec): Handler {
  return (context) => {
    if (context.name === 'deno') {
      const sub = context.words[1]?.text;
      if (sub === 'eval') {
        const code = context.words.slice(2).find((word) => !word.text.startsWith('-'));
        if (code && (code.dynamic || JAVASCRIPT_RUNS.test(code.text))) {
          context.hazard('deno eval program text that runs programs or evaluates code');
        }
        return;
      }
      if (sub === undefined || sub === 'repl') readsStdin(context, 'its program', false);
      return;
    }
    if (context.name === 'bun') {
      const sub = context.words[1]?.text;
      if (sub === 'x') return context.command(context.words.slice(2));
      if (sub !== undefined && !sub.startsWith('-')) return;
    }
    const scan = scanOptions(context.words, 1, spec.options);
    for (const value of valuesOf(scan, ...spec.code)) {
      if (value.dynamic) context.hazard(`${context.name} running program text computed at run time`);
      else if (context.placeholder !== undefined && value.text.includes(context.placeholder))
        context.hazard(`${context.name} running program text taken from its input (${context.placeholder})`);
      else if (spec.runs?.test(value.text)) {
        context.hazard(
          `${context.name} program text that runs programs or evaluates code (${spec.runs.exec(value.text)![0].trim()})`,
        );
      }
    }
    for (const value of valuesOf(scan, ...(spec.modules ?? []))) {
      if (spec.moduleRuns?.test(value.text)) {
        context.hazard(`${context.name} loading a module that runs programs (${value.text})`);
      }
    }
    if (context.inputAppended && spec.code.includes(context.words[context.words.length - 1]?.text ?? '')) {
      context.hazard(`${context.name} running program text taken from xargs's input`);
    }
    if (has(scan, ...spec.code)) return;
    if (spec.interactive && has(scan, ...spec.interactive)) {
      context.hazard(`${context.name} reading a program from its input (interactive mode)`);
      return;
    }
    const files = valuesOf(scan, ...(spec.file ?? []));
    const script = files[0] ?? context.words[scan.end];
    if (!script) {
      readsStdin(context, 'its program', false);
      return;
    }
    if (script.processSubstitution || STDIN_PATH.test(script.text)) {
      context.hazard(`${context.name} reading its program from a pipe`);
    }
  };
}
