// tree-sitter-bash (through web-tree-sitter, WASM; both npm packages ship their .wasm, nothing is
// downloaded at run time) against this package's hand-written parser, on the action-policy
// corpus: the ordinary agent commands and the evasions. Prints JSON lines:
//   - `parse`: microseconds per command line (p50, p99, mean over the lines; each line's figure is
//     the best of 5 interleaved batches), CPU and wall. tree-sitter is timed parsing alone and
//     parsing plus one walk over the tree (the least a policy built on it must do); ours is timed
//     as the grammar alone (`parseSimpleCommands`), the whole resolution (`parseCommandLine`) and
//     the policy's check.
//   - `cold`: milliseconds from a fresh node process's start to its first parsed line (median of
//     7 processes), and the same process's memory after parsing the corpus 20 times; beside them
//     node alone and node importing @shears/core alone (which the parser imports for its error
//     class), so that the parser's own share can be read off.
//   - `correctness`: lines each parser reads as a syntax error (all corpus lines are valid bash:
//     each evasion with a proof ran in bash), and the commands each finds in command position,
//     compared line by line (the simple commands, before wrappers and programs are resolved).
// Needs the built package for the cold start of ours: `pnpm -F @shears/shell-policy build` first.
//   pnpm -F @shears/shell-policy bench:tree-sitter
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Language, type Node, Parser } from 'web-tree-sitter';
import { createActionPolicy } from '../src/action-policy.js';
import { parseCommandLine, parseSimpleCommands } from '../src/shell-parse.js';
import { ORDINARY_COMMANDS } from '../test/action-policy-corpus.js';
import { EVASIONS, WRAPPER_ROUTES } from '../test/action-policy-evasions.js';

const require = createRequire(import.meta.url);
const WASM = require.resolve('tree-sitter-bash/tree-sitter-bash.wasm');
const DIST = fileURLToPath(new URL('../dist/shell-parse.js', import.meta.url));
const round2 = (value: number) => Math.round(value * 100) / 100;
const load = () => loadavg().map(round2);

const evasions = [...EVASIONS, ...WRAPPER_ROUTES].map((evasion) => evasion.line);
const lines = [...ORDINARY_COMMANDS, ...evasions];

await Parser.init();
const bash = await Language.load(WASM);
const parser = new Parser();
parser.setLanguage(bash);

/** Visits every node once with a cursor (no per-node objects): the least a policy must read. */
function walk(line: string): number {
  const tree = parser.parse(line)!;
  const cursor = tree.walk();
  let visited = 0;
  for (;;) {
    visited += cursor.nodeType.length > 0 ? 1 : 0;
    if (cursor.gotoFirstChild()) continue;
    while (!cursor.gotoNextSibling()) {
      if (!cursor.gotoParent()) {
        cursor.delete();
        tree.delete();
        return visited;
      }
    }
  }
}

function parseOnly(line: string): void {
  parser.parse(line)!.delete();
}

const policy = createActionPolicy({ commands: { deny: ['rm', 'curl'] } });
const candidates: Record<string, (line: string) => unknown> = {
  'tree-sitter parse': parseOnly,
  'tree-sitter parse+walk': walk,
  'ours grammar (parseSimpleCommands)': parseSimpleCommands,
  'ours resolved (parseCommandLine)': (line) => parseCommandLine(line),
  'ours policy check': (line) => policy.checkCommand(line),
};

// ---- speed -------------------------------------------------------------------------------------

const REPS = Number(process.env.BENCH_REPS ?? 40);
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

for (const run of Object.values(candidates)) for (const line of lines) run(line); // warm up
const best: Record<string, { cpu: number[]; wall: number[] }> = {};
for (const name of Object.keys(candidates)) best[name] = { cpu: [], wall: [] };
for (const [index, line] of lines.entries()) {
  for (const name of Object.keys(candidates)) {
    best[name]!.cpu[index] = Number.POSITIVE_INFINITY;
    best[name]!.wall[index] = Number.POSITIVE_INFINITY;
  }
  for (let batch = 0; batch < 5; batch += 1) {
    for (const [name, run] of Object.entries(candidates)) {
      const cpuStart = process.cpuUsage();
      const started = performance.now();
      for (let rep = 0; rep < REPS; rep += 1) run(line);
      const wall = ((performance.now() - started) * 1000) / REPS;
      const used = process.cpuUsage(cpuStart);
      const cpu = (used.user + used.system) / REPS;
      best[name]!.cpu[index] = Math.min(best[name]!.cpu[index]!, cpu);
      best[name]!.wall[index] = Math.min(best[name]!.wall[index]!, wall);
    }
  }
}
for (const [name, figures] of Object.entries(best)) {
  const cpu = [...figures.cpu].sort((a, b) => a - b);
  const wall = [...figures.wall].sort((a, b) => a - b);
  const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
  console.log(
    JSON.stringify({
      bench: 'tree-sitter-bash',
      metric: 'parse',
      candidate: name,
      unit: 'us',
      lines: lines.length,
      cpu_p50: round2(percentile(cpu, 50)),
      cpu_p99: round2(percentile(cpu, 99)),
      cpu_mean: round2(mean(cpu)),
      wall_p50: round2(percentile(wall, 50)),
      wall_p99: round2(percentile(wall, 99)),
      wall_mean: round2(mean(wall)),
      loadavg: load(),
    }),
  );
}

// ---- cold start and memory ---------------------------------------------------------------------

const corpus = JSON.stringify(lines);
const CHILDREN: Record<string, string> = {
  'node alone': `
    const memory = process.memoryUsage();
    console.log(JSON.stringify({ first: performance.now(), memory }));`,
  'tree-sitter': `
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    const parser = new Parser();
    parser.setLanguage(await Language.load(${JSON.stringify(WASM)}));
    parser.parse('ls -la | grep x').delete();
    const first = performance.now();
    const lines = ${corpus};
    for (let round = 0; round < 20; round += 1) for (const line of lines) parser.parse(line).delete();
    console.log(JSON.stringify({ first, memory: process.memoryUsage() }));`,
  '@shears/core alone (which ours imports for its errors)': `
    await import('@shears/core');
    const first = performance.now();
    console.log(JSON.stringify({ first, memory: process.memoryUsage() }));`,
  ours: `
    const { parseCommandLine } = await import(${JSON.stringify(DIST)});
    parseCommandLine('ls -la | grep x');
    const first = performance.now();
    const lines = ${corpus};
    for (let round = 0; round < 20; round += 1) for (const line of lines) { try { parseCommandLine(line); } catch {} }
    console.log(JSON.stringify({ first, memory: process.memoryUsage() }));`,
};
if (!existsSync(DIST)) {
  console.error(`cold start skipped: ${DIST} is missing (run pnpm -F @shears/shell-policy build)`);
} else {
  for (const [name, script] of Object.entries(CHILDREN)) {
    const runs: { first: number; memory: NodeJS.MemoryUsage }[] = [];
    for (let run = 0; run < 7; run += 1) {
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
        encoding: 'utf8',
      });
      if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
      runs.push(JSON.parse(child.stdout));
    }
    runs.sort((a, b) => a.first - b.first);
    const median = runs[3]!;
    const mb = (bytes: number) => round2(bytes / 2 ** 20);
    console.log(
      JSON.stringify({
        bench: 'tree-sitter-bash',
        metric: 'cold',
        candidate: name,
        first_parse_ms: round2(median.first),
        rss_mb: mb(median.memory.rss),
        heap_used_mb: mb(median.memory.heapUsed),
        external_mb: mb(median.memory.external),
        array_buffers_mb: mb(median.memory.arrayBuffers),
        loadavg: load(),
      }),
    );
  }
}

// ---- correctness -------------------------------------------------------------------------------

/** The command name as bash sees it after quote removal (enough for the corpus's names). */
function unquote(text: string): string {
  return text
    .replace(/\$'((?:[^'\\]|\\.)*)'/g, (_, body: string) =>
      body.replace(/\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|[0-7]{1,3})/g, (__, code: string) =>
        String.fromCodePoint(
          code[0] === 'x' || code[0] === 'u' ? Number.parseInt(code.slice(1), 16) : Number.parseInt(code, 8),
        ),
      ),
    )
    .replace(/\$"/g, '"')
    .replace(/\\(.)/g, '$1')
    .replace(/["']/g, '');
}

function treeSitterCommands(line: string): { names: string[]; error: boolean } {
  const tree = parser.parse(line)!;
  const names: string[] = [];
  const visit = (node: Node) => {
    if (node.type === 'command') {
      const name = node.childForFieldName('name');
      if (name) names.push(unquote(name.text));
    } else if (node.type === 'declaration_command' || node.type === 'unset_command') {
      names.push(node.child(0)!.text); // export, declare, local, readonly, typeset, unset
    } else if (node.type === 'test_command' && node.text.startsWith('[') && !node.text.startsWith('[[')) {
      names.push('[');
    }
    for (const child of node.namedChildren) if (child) visit(child);
  };
  visit(tree.rootNode);
  const error = tree.rootNode.hasError;
  tree.delete();
  return { names, error };
}

function ourCommands(line: string): { names: string[]; error: boolean } {
  try {
    return { names: parseSimpleCommands(line).map((words) => words[0]!.text), error: false };
  } catch {
    return { names: [], error: true };
  }
}

const INVALID = [
  'echo "unterminated',
  'echo $(ls',
  'echo (x)',
  'echo )',
  "cat 'x",
  'if true; then ls',
  'a |',
];
const sets: Record<string, readonly string[]> = {
  ordinary: ORDINARY_COMMANDS,
  evasions,
  invalid: INVALID,
};
const differences: { line: string; ours: string[]; treeSitter: string[] }[] = [];
const treeSitterSyntaxErrors: string[] = [];
for (const [set, list] of Object.entries(sets)) {
  let oursErrors = 0;
  let treeSitterErrors = 0;
  let agree = 0;
  let hiddenFoundByOurs = 0;
  let hiddenFoundByTreeSitter = 0;
  for (const line of list) {
    const ours = ourCommands(line);
    const theirs = treeSitterCommands(line);
    if (ours.error) oursErrors += 1;
    if (theirs.error) {
      treeSitterErrors += 1;
      if (set !== 'invalid') treeSitterSyntaxErrors.push(line);
    }
    const key = (names: string[]) => [...names].sort().join('\u0000');
    if (key(ours.names) === key(theirs.names)) agree += 1;
    else if (set !== 'invalid') differences.push({ line, ours: ours.names, treeSitter: theirs.names });
    const denied = (names: string[]) => names.some((name) => /(?:^|\/)(?:rm|curl)$/.test(name));
    if (denied(ours.names)) hiddenFoundByOurs += 1;
    if (denied(theirs.names)) hiddenFoundByTreeSitter += 1;
  }
  console.log(
    JSON.stringify({
      bench: 'tree-sitter-bash',
      metric: 'correctness',
      set,
      lines: list.length,
      syntax_errors_ours: oursErrors,
      syntax_errors_tree_sitter: treeSitterErrors,
      same_commands: agree,
      ...(set === 'evasions'
        ? {
            rm_or_curl_in_command_position_ours: hiddenFoundByOurs,
            rm_or_curl_in_command_position_tree_sitter: hiddenFoundByTreeSitter,
          }
        : {}),
    }),
  );
}
for (const line of treeSitterSyntaxErrors) {
  console.log(JSON.stringify({ bench: 'tree-sitter-bash', metric: 'tree-sitter-syntax-error', line }));
}
for (const difference of differences) {
  console.log(JSON.stringify({ bench: 'tree-sitter-bash', metric: 'difference', ...difference }));
}
