// search_files: content search by regex and file search by glob. Uses ripgrep when the sandbox
// has it and falls back to `find` + `grep -E` (busybox-compatible) when it does not; results
// are paged with offset/limit and capped before they leave the sandbox (`head`).
import { posix } from 'node:path';
import { defineTool, type SandboxV1, type ToolV1 } from '@shears/core';
import { z } from 'zod';
import {
  componentsUnder,
  newMarker,
  type PathPlan,
  runConfined,
  throwWalkFailure,
  walkArguments,
  walkFunction,
} from './confined.js';
import { similarNames } from './read-file.js';
import { checkRepeat } from './repeat-guard.js';
import { errorResult, guarded, jsonResult } from './result.js';
import type { ResolvedFileToolsSettings } from './settings.js';
import { readFields, shellQuote } from './shell.js';
import { displayPath, normalizeToolPath, planPath } from './workspace.js';

const SEARCH_FILES_DESCRIPTION =
  'Search file contents or find files by name. Use this instead of grep/rg/find/ls in terminal. Ripgrep-backed, faster than shell equivalents.\n\n' +
  "Content search (target='content'): Regex search inside files. Output modes: full matches with line numbers, file paths only, or match counts.\n\n" +
  "File search (target='files'): Find files by glob pattern (e.g., '*.py', '*config*'). Also use this instead of ls — results sorted by modification time.";

export const searchFilesJsonSchema = {
  type: 'object',
  properties: {
    pattern: {
      type: 'string',
      description: "Regex pattern for content search, or glob pattern (e.g., '*.py') for file search",
    },
    target: {
      type: 'string',
      enum: ['content', 'files'],
      description: "'content' searches inside file contents, 'files' searches for files by name",
      default: 'content',
    },
    path: {
      type: 'string',
      description: 'Directory or file to search in (default: current working directory)',
      default: '.',
    },
    file_glob: {
      type: 'string',
      description: "Filter files by pattern in grep mode (e.g., '*.py' to only search Python files)",
    },
    limit: { type: 'integer', description: 'Maximum number of results to return (default: 50)', default: 50 },
    offset: { type: 'integer', description: 'Skip first N results for pagination (default: 0)', default: 0 },
    output_mode: {
      type: 'string',
      enum: ['content', 'files_only', 'count'],
      description:
        "Output format for grep mode: 'content' shows matching lines with line numbers, 'files_only' lists file paths, 'count' shows match counts per file",
      default: 'content',
    },
    context: {
      type: 'integer',
      description: 'Number of context lines before and after each match (grep mode only)',
      default: 0,
    },
  },
  required: ['pattern'],
} as const;

const count = (fallback: number, minimum: number) =>
  z.preprocess((value) => {
    const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    return typeof number === 'number' && Number.isFinite(number)
      ? Math.max(minimum, Math.trunc(number))
      : fallback;
  }, z.number().int());

export const searchFilesInputSchema = z.object({
  pattern: z.string().min(1, 'pattern must not be empty'),
  target: z
    .preprocess(
      (value) => (value === 'grep' ? 'content' : value === 'find' ? 'files' : value),
      z.enum(['content', 'files']),
    )
    .optional(),
  path: z.string().optional(),
  file_glob: z.string().optional(),
  limit: count(50, 1).optional(),
  offset: count(0, 0).optional(),
  output_mode: z.enum(['content', 'files_only', 'count']).optional(),
  context: count(0, 0).optional(),
});
export type SearchFilesArgs = z.output<typeof searchFilesInputSchema>;

const MAX_LIMIT = 1000;
const OUTPUT_MARKER = '@@SHEARS-SEARCH-OUTPUT@@';
const ERROR_MARKER = '@@SHEARS-SEARCH-STDERR@@';

/** ripgrep regex shorthands that POSIX ERE lacks, for the grep fallback. */
function toExtendedRegex(pattern: string): string {
  return pattern
    .replace(/\\d/g, '[0-9]')
    .replace(/\\D/g, '[^0-9]')
    .replace(/\\w/g, '[[:alnum:]_]')
    .replace(/\\W/g, '[^[:alnum:]_]')
    .replace(/\\s/g, '[[:space:]]')
    .replace(/\\S/g, '[^[:space:]]');
}

/** `find` arguments that select files by a glob (basename globs use -name, others -path). */
function findGlobArgs(glob: string): string {
  if (!glob.includes('/')) return `-name ${shellQuote(glob)}`;
  return `-path ${shellQuote(`*${glob.replace(/^\.\//, '').replace(/\*\*\//g, '')}`)}`;
}

interface Match {
  path: string;
  line: number;
  content: string;
}

function stripDot(path: string): string {
  return path.startsWith('./') ? path.slice(2) : path;
}

export function createSearchFilesTool(settings: ResolvedFileToolsSettings): ToolV1<SearchFilesArgs> {
  return defineTool<SearchFilesArgs>({
    name: 'search_files',
    description: SEARCH_FILES_DESCRIPTION,
    inputSchema: searchFilesInputSchema,
    jsonSchema: searchFilesJsonSchema,
    toolset: 'file',
    maxResultChars: 100_000,
    execute: (args, context) =>
      guarded(async () => {
        const sandbox = context.sandbox;
        const target = args.target ?? 'content';
        const path = args.path ?? '.';
        const limit = Math.min(args.limit ?? 50, MAX_LIMIT);
        const offset = args.offset ?? 0;
        const outputMode = args.output_mode ?? 'content';
        const contextLines = Math.min(args.context ?? 0, 20);
        const absolute = normalizeToolPath(path, sandbox.workdir, { confine: settings.confine });
        const repeat = checkRepeat(
          context,
          `search_files\0${JSON.stringify([args.pattern, target, absolute, args.file_glob, limit, offset, outputMode, contextLines])}`,
        );
        if (repeat.kind === 'block') {
          return errorResult(
            `BLOCKED: You have run this exact search ${repeat.count} times in a row. Use the results you already have, or change the pattern, path or offset.`,
          );
        }
        const warning =
          repeat.kind === 'warn'
            ? `You have run this exact search ${repeat.count} times in a row; a 4th identical search will be blocked.`
            : undefined;
        const wanted =
          offset +
          limit +
          1 +
          (target === 'content' && outputMode === 'content' && contextLines > 0 ? 200 : 0);

        const plan = await planPath(sandbox, path, {
          confine: settings.confine,
          signal: context.signal,
          timeoutMs: settings.timeoutMs,
        });
        // `$arg` is `.` (a directory: the shell is in it) or /proc/self/fd/3 (one checked file).
        let search: string;
        if (target === 'files') {
          const glob = /[*?[]/.test(args.pattern) ? args.pattern : `*${args.pattern}*`;
          search = `if command -v rg >/dev/null 2>&1; then
  rg --no-config --no-follow --files --sortr=modified -g ${shellQuote(glob)} -- "$arg" 2>"$e"
else
  find "$arg" -type f ! -path '*/.*' ${findGlobArgs(glob)} -exec stat -c '%Y %n' {} + 2>"$e" | sort -rn | cut -d ' ' -f 2-
fi`;
        } else {
          const flag = outputMode === 'files_only' ? '-l' : outputMode === 'count' ? '-c' : '';
          const rgContext = contextLines > 0 && outputMode === 'content' ? `-C ${contextLines}` : '';
          const rgGlob = args.file_glob ? `--glob ${shellQuote(args.file_glob)}` : '';
          const grepFilter = args.file_glob ? findGlobArgs(args.file_glob) : '';
          search = `if command -v rg >/dev/null 2>&1; then
  rg --no-config --no-follow --line-number --no-heading --with-filename --color never ${rgContext} ${rgGlob} ${flag} -e ${shellQuote(args.pattern)} -- "$arg" 2>"$e"
elif [ "$arg" = . ]; then
  find . -type f ! -path '*/.*' ${grepFilter} -exec grep -nH -E ${rgContext} ${flag} -e ${shellQuote(toExtendedRegex(args.pattern))} {} + 2>"$e"
else
  grep -nH -E ${rgContext} ${flag} -e ${shellQuote(toExtendedRegex(args.pattern))} "$arg" 2>"$e"
fi`;
        }
        const script = `${walkFunction(plan.walk)}
walk ${walkArguments(plan.components)} || {
  if [ "$why" = missing ] || [ "$why" = notdir ]; then printf 'STATUS:ok\\nTYPE:missing\\n%s\\n' ${shellQuote(OUTPUT_MARKER)}; exit 0; fi
  walkfail
}
if [ -n "$c" ] && [ ! -e "$c" ] && [ ! -L "$c" ]; then
  inroot || { printf 'STATUS:raced\\n'; exit 0; }
  printf 'STATUS:ok\\nTYPE:missing\\n%s\\n' ${shellQuote(OUTPUT_MARKER)}
  ls -1a . 2>/dev/null | head -n 50; exit 0
fi
arg=.
if [ -n "$c" ] && [ -d "$c" ] && [ ! -L "$c" ]; then
  cd -P -- "$c" 2>/dev/null || { printf 'STATUS:unresolvable\\n'; exit 0; }
  cur=\${cur%/}/$c; c=; ups=$ups/..
fi
if [ -n "$c" ]; then
  [ -f "$c" ] || { inroot || { printf 'STATUS:raced\\n'; exit 0; }; printf 'STATUS:ok\\nTYPE:other\\n'; exit 0; }
  exec 3< "$c" || { printf 'STATUS:openfailed\\n'; exit 0; }
  set -- $(stat -c '%d:%i %h %f' -- "$ups" "$c" 2>/dev/null) $(stat -L -c '%d:%i %h %f' /proc/self/fd/3 2>/dev/null)
  [ $# = 9 ] || { printf 'STATUS:nostat\\n'; exit 0; }
  [ "$1" = "$RID" ] && [ "$4" = "$7" ] || { printf 'STATUS:raced\\n'; exit 0; }
  case $6 in 8???) ;; *) printf 'STATUS:raced\\n'; exit 0 ;; esac
  [ "$8" = 1 ] || { printf 'STATUS:hardlink\\nLINKS:%s\\n' "$8"; exit 0; }
  arg=/proc/self/fd/3
else
  inroot || { printf 'STATUS:raced\\n'; exit 0; }
fi
printf 'STATUS:ok\\nTYPE:dir\\nDIR:%s\\nFILE:%s\\n' "$cur" "$c"
e=$(mktemp 2>/dev/null || echo /tmp/shears-search.$$)
printf '%s\\n' ${shellQuote(OUTPUT_MARKER)}
{ ${search}
} | head -n ${wanted}
printf '%s\\n' ${shellQuote(ERROR_MARKER)}
head -c 2000 "$e" 2>/dev/null
rm -f "$e"
`;
        const stdout = await runConfined(sandbox, script, {
          signal: context.signal,
          timeoutMs: settings.timeoutMs,
          what: 'search_files',
        });
        const outputAt = stdout.indexOf(`${OUTPUT_MARKER}\n`);
        const fields = readFields(outputAt >= 0 ? stdout.slice(0, outputAt) : stdout);
        if (fields.get('STATUS') !== 'ok') throwWalkFailure(plan, fields);
        const rest = outputAt >= 0 ? stdout.slice(outputAt + OUTPUT_MARKER.length + 1) : '';
        const errorAt = rest.indexOf(`${ERROR_MARKER}\n`);
        const body = errorAt >= 0 ? rest.slice(0, errorAt) : rest;
        const stderr = errorAt >= 0 ? rest.slice(errorAt + ERROR_MARKER.length + 1).trim() : '';
        if (fields.get('TYPE') === 'missing') {
          const base = plan.absolute.slice(plan.absolute.lastIndexOf('/') + 1);
          const similar = similarNames(
            base,
            body.split('\n').filter((name) => name && name !== '.' && name !== '..'),
          );
          return errorResult(
            `Path not found: ${path}${similar.length > 0 ? `. Similar paths: ${similar.join(', ')}` : ''}`,
          );
        }
        if (fields.get('TYPE') === 'other')
          return errorResult(`Cannot search ${path}: it is not a regular file or a directory`);
        const searchDir = fields.get('DIR') ?? plan.walk.root.path;
        const verifyOptions = {
          signal: context.signal,
          timeoutMs: settings.timeoutMs,
          pattern: args.pattern,
          lineBytes: settings.maxMatchChars * 4 + 4,
          namesOnly: target === 'files',
        };
        const singleFile = fields.get('FILE') ?? '';
        const workspace = plan.walk.shownWorkspace;
        // Paths as the search printed them (relative to the directory it ran in) → as shown.
        // The real path of a file the search printed.
        const fileOf = (printed: string): string =>
          singleFile && printed === '/proc/self/fd/3'
            ? posix.join(searchDir, singleFile)
            : posix.join(searchDir, stripDot(printed));
        const shownPath = (printed: string): string => displayPath(fileOf(printed), workspace);
        const lines = body.split('\n').filter((line) => line !== '' && line !== '--');
        if (lines.length === 0 && stderr && !/No such file|Permission denied/i.test(stderr)) {
          return errorResult(`Search failed: ${stderr.split('\n')[0]}`);
        }
        const pageInfo = (total: number) => {
          const truncated = total > offset + limit;
          const hint = truncated
            ? `\n\n[Hint: Results truncated. Use offset=${offset + limit} to see more, or narrow with a more specific pattern or file_glob.]`
            : '';
          return { truncated, hint };
        };
        if (target === 'files' || outputMode === 'files_only') {
          const printed = lines;
          const verified = await verifyFiles(
            sandbox,
            plan,
            new Map(
              printed.map((file) => [file, { file: fileOf(file), lines: [], recount: target !== 'files' }]),
            ),
            verifyOptions,
          );
          const files = printed
            .filter((file) => {
              const check = verified.get(file);
              return check?.ok && (target === 'files' || (check.count ?? 0) > 0);
            })
            .map(shownPath);
          const { truncated, hint } = pageInfo(files.length);
          return jsonResult(
            {
              total_count: files.length,
              files: files.slice(offset, offset + limit),
              truncated,
              _warning: warning,
            },
            hint,
          );
        }
        if (outputMode === 'count') {
          const printedCounts = new Map<string, number>();
          for (const line of lines) {
            const colon = line.lastIndexOf(':');
            const number = Number(line.slice(colon + 1));
            if (colon > 0 && number > 0) printedCounts.set(line.slice(0, colon), number);
          }
          const verified = await verifyFiles(
            sandbox,
            plan,
            new Map(
              [...printedCounts.keys()].map((file) => [
                file,
                { file: fileOf(file), lines: [], recount: true },
              ]),
            ),
            verifyOptions,
          );
          const entries: Array<[string, number]> = [];
          for (const file of printedCounts.keys()) {
            const count = verified.get(file);
            // The count shown is the one taken from the checked, open file.
            if (count?.ok && (count.count ?? 0) > 0) entries.push([shownPath(file), count.count!]);
          }
          const { truncated, hint } = pageInfo(entries.length);
          const paged = Object.fromEntries(entries.slice(offset, offset + limit));
          return jsonResult(
            {
              total_count: entries.reduce((sum, [, n]) => sum + n, 0),
              counts: paged,
              truncated,
              _warning: warning,
            },
            hint,
          );
        }
        // Match lines are `path:line:text`; context lines `path-line-text`. The paths seen on
        // match lines tell where a context line's path ends.
        const matchLine = /^(.*?):(\d+):(.*)$/;
        const known = new Set<string>();
        for (const line of lines) {
          const parsed = matchLine.exec(line);
          if (parsed) known.add(parsed[1]!);
        }
        const found: Match[] = [];
        for (const line of lines) {
          const parsed = matchLine.exec(line);
          let entry: Match | undefined;
          if (parsed && known.has(parsed[1]!))
            entry = { path: parsed[1]!, line: Number(parsed[2]), content: parsed[3]! };
          else {
            for (const candidate of known) {
              const context = /^(\d+)-(.*)$/.exec(line.slice(candidate.length + 1));
              if (line.startsWith(`${candidate}-`) && context) {
                entry = { path: candidate, line: Number(context[1]), content: context[2]! };
                break;
              }
            }
          }
          if (entry) found.push({ ...entry, content: entry.content.slice(0, settings.maxMatchChars) });
        }
        const wantedLines = new Map<string, { file: string; lines: number[]; recount: boolean }>();
        for (const match of found) {
          const entry = wantedLines.get(match.path) ?? {
            file: fileOf(match.path),
            lines: [],
            recount: false,
          };
          entry.lines.push(match.line);
          wantedLines.set(match.path, entry);
        }
        const verified = await verifyFiles(sandbox, plan, wantedLines, verifyOptions);
        // A match is shown only when the checked, open file has that very line.
        const matches = found
          .filter(
            (match) =>
              verified.get(match.path)?.ok &&
              verified.get(match.path)!.lines.get(match.line)?.slice(0, settings.maxMatchChars) ===
                match.content,
          )
          .map((match) => ({ ...match, path: shownPath(match.path) }));
        const { truncated, hint } = pageInfo(matches.length);
        return jsonResult(
          {
            total_count: matches.length,
            matches: matches.slice(offset, offset + limit),
            truncated,
            _warning: warning,
          },
          hint,
        );
      }),
  });
}

interface VerifiedFile {
  ok: boolean;
  lines: Map<number, string>;
  count?: number;
}

/**
 * Checks every file a search printed, race-free: walks to it from the pinned root, opens it,
 * checks the descriptor (regular, one link, in the root) and reads the printed line numbers (and
 * a fresh match count) from the open file. Search programs open files by path, so a directory
 * swapped for a symlink while they ran could have let them read a file outside; nothing they
 * printed is shown unless the checked file says the same.
 */
async function verifyFiles(
  sandbox: SandboxV1,
  plan: PathPlan,
  files: Map<string, { file: string; lines: number[]; recount: boolean }>,
  options: {
    signal?: AbortSignal;
    timeoutMs: number;
    pattern: string;
    lineBytes: number;
    namesOnly: boolean;
  },
): Promise<Map<string, VerifiedFile>> {
  const result = new Map<string, VerifiedFile>();
  if (files.size === 0) return result;
  const marker = newMarker();
  const keys = [...files.keys()];
  // One walk per directory; then each file is checked by name (and opened) inside it.
  const groups = new Map<string, { components: string[]; calls: string[] }>();
  keys.forEach((key, index) => {
    const entry = files.get(key)!;
    const components = componentsUnder(entry.file, plan.walk);
    if (!components || components.length === 0) return;
    const directory = components.slice(0, -1);
    const name = components[components.length - 1]!;
    const group = groups.get(directory.join('/')) ?? { components: directory, calls: [] };
    const lines = [...new Set(entry.lines)].filter((line) => Number.isInteger(line) && line > 0);
    const sed = lines.length > 0 ? lines.map((line) => `-e '${line}{=;p;}'`).join(' ') : '';
    group.calls.push(`vf ${index} ${entry.recount ? 1 : 0} ${shellQuote(sed)} ${walkArguments([name])}`);
    groups.set(directory.join('/'), group);
  });
  const calls = [...groups.values()].map(
    (group) => `if walk ${walkArguments([...group.components, '.'])} && [ -z "$c" ] && inroot; then
${group.calls.join('\n')}
else
${group.calls.map((call) => `printf 'V%s:bad\\n' ${call.split(' ')[1]}`).join('\n')}
fi`,
  );
  const script = `${walkFunction(plan.walk)}
vf() {
  vi=$1; vrc=$2; sedargs=$3; name=$4
  case $name in "$GL"*)
    p=\${name#"$GL"}; IFS=; set +f; m=; n=0
    for x in $p; do if [ -e "$x" ] || [ -L "$x" ]; then m=$x; n=$((n + 1)); fi; done
    set -f; IFS=$DIFS; [ "$n" = 1 ] || { printf 'V%s:bad\\n' "$vi"; return; }; name=$m ;;
  esac
  [ -f "$name" ] && [ ! -L "$name" ] || { printf 'V%s:bad\\n' "$vi"; return; }
${
  options.namesOnly
    ? `  printf 'V%s:ok\\n' "$vi"`
    : `  exec 3< "$name" || { printf 'V%s:bad\\n' "$vi"; return; }
  set -- $(stat -c '%d:%i %h %f' -- "$ups" "$name" 2>/dev/null) $(stat -L -c '%d:%i %h %f' /proc/self/fd/3 2>/dev/null)
  if [ $# = 9 ] && [ "$1" = "$RID" ] && [ "$4" = "$7" ] && [ "$8" = 1 ]; then
    case $6 in 8???) ;; *) printf 'V%s:bad\\n' "$vi"; exec 3<&-; return ;; esac
  else printf 'V%s:bad\\n' "$vi"; exec 3<&-; return
  fi
  printf 'V%s:ok\\n' "$vi"
  if [ "$vrc" = 1 ]; then
    if command -v rg >/dev/null 2>&1; then n=$(rg --no-config -c -e ${shellQuote(options.pattern)} - < /proc/self/fd/3 2>/dev/null)
    else n=$(grep -c -E -e ${shellQuote(toExtendedRegex(options.pattern))} < /proc/self/fd/3 2>/dev/null); fi
    printf 'C%s:%s\\n' "$vi" "\${n:-0}"
  fi
  if [ -n "$sedargs" ]; then
    printf '%s\\n' ${shellQuote(marker)}
    eval "sed -n $sedargs" < /proc/self/fd/3 | cut -b 1-${options.lineBytes}
    printf '%s%s\\n' ${shellQuote(marker)} "$vi"
  fi
  exec 3<&-`
}
}
${calls.join('\n')}
`;
  const stdout = await runConfined(sandbox, script, {
    signal: options.signal,
    timeoutMs: options.timeoutMs,
    what: 'search_files',
  });
  // Parse: V<i>:ok|bad, C<i>:<n>, and for line reads: marker, (number, text)*, marker<i>.
  const rows = stdout.split('\n');
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index]!;
    const status = /^V(\d+):(ok|bad)$/.exec(row);
    if (status) {
      const key = keys[Number(status[1])];
      if (key !== undefined) result.set(key, { ok: status[2] === 'ok', lines: new Map() });
      continue;
    }
    const count = /^C(\d+):(\d+)$/.exec(row);
    if (count) {
      const entry = result.get(keys[Number(count[1])] ?? '');
      if (entry) entry.count = Number(count[2]);
      continue;
    }
    if (row === marker) {
      const lines = new Map<number, string>();
      let cursor = index + 1;
      while (cursor < rows.length && !rows[cursor]!.startsWith(marker)) {
        const number = Number(rows[cursor]);
        lines.set(number, rows[cursor + 1] ?? '');
        cursor += 2;
      }
      const key = keys[Number(rows[cursor]?.slice(marker.length))];
      const entry = key === undefined ? undefined : result.get(key);
      if (entry?.ok) entry.lines = lines;
      index = cursor;
    }
  }
  return result;
}
