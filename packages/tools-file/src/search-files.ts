// search_files: content search by regex and file search by glob. Uses ripgrep when the sandbox
// has it and falls back to `find` + `grep -E` (busybox-compatible) when it does not; results
// are paged with offset/limit and capped before they leave the sandbox (`head`).
import { defineTool, type ToolV1 } from '@shears/core';
import { z } from 'zod';
import { similarNames } from './read-file.js';
import { checkRepeat } from './repeat-guard.js';
import { errorResult, guarded, jsonResult } from './result.js';
import type { ResolvedFileToolsSettings } from './settings.js';
import { inSubshell, readFields, shellQuote } from './shell.js';
import { normalizeToolPath, parseResolved, REPORT_RESOLVED, resolveScript } from './workspace.js';

export const SEARCH_FILES_DESCRIPTION =
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
export function toExtendedRegex(pattern: string): string {
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

        let search: string;
        if (target === 'files') {
          const glob = /[*?[]/.test(args.pattern) ? args.pattern : `*${args.pattern}*`;
          search = `if command -v rg >/dev/null 2>&1; then
  rg --files --sortr=modified -g ${shellQuote(glob)} -- "$rel" 2>"$e"
else
  find "$rel" -type f ! -path '*/.*' ${findGlobArgs(glob)} -exec stat -c '%Y %n' {} + 2>"$e" | sort -rn | cut -d ' ' -f 2-
fi`;
        } else {
          const flag = outputMode === 'files_only' ? '-l' : outputMode === 'count' ? '-c' : '';
          const rgContext = contextLines > 0 && outputMode === 'content' ? `-C ${contextLines}` : '';
          const rgGlob = args.file_glob ? `--glob ${shellQuote(args.file_glob)}` : '';
          const grepFilter = args.file_glob ? findGlobArgs(args.file_glob) : '';
          search = `if command -v rg >/dev/null 2>&1; then
  rg --line-number --no-heading --with-filename --color never ${rgContext} ${rgGlob} ${flag} -e ${shellQuote(args.pattern)} -- "$rel" 2>"$e"
else
  find "$rel" -type f ! -path '*/.*' ${grepFilter} -exec grep -nH -E ${rgContext} ${flag} -e ${shellQuote(toExtendedRegex(args.pattern))} {} + 2>"$e"
fi`;
        }
        const script = `${resolveScript(absolute, sandbox.workdir, settings.confine)}${REPORT_RESOLVED}
if [ "$t" = missing ]; then
  printf '%s\\n' ${shellQuote(OUTPUT_MARKER)}
  [ "$pdir" = 1 ] && ls -1a "\${full%/*}" 2>/dev/null | head -n 50
  exit 0
fi
cd "$ws" 2>/dev/null || cd /
if [ "$full" = "$ws" ]; then rel=.; else case "$full" in "$ws"/*) rel="\${full#"$ws"/}" ;; *) rel="$full" ;; esac; fi
e=$(mktemp 2>/dev/null || echo /tmp/shears-search.$$)
printf '%s\\n' ${shellQuote(OUTPUT_MARKER)}
{ ${search}
} | head -n ${wanted}
printf '%s\\n' ${shellQuote(ERROR_MARKER)}
head -c 2000 "$e" 2>/dev/null
rm -f "$e"
`;
        const result = await sandbox.exec(inSubshell(script), { signal: context.signal });
        const stdout = result.stdout;
        const outputAt = stdout.indexOf(`${OUTPUT_MARKER}\n`);
        const fields = readFields(outputAt >= 0 ? stdout.slice(0, outputAt) : stdout);
        const resolved = parseResolved(path, fields);
        const rest = outputAt >= 0 ? stdout.slice(outputAt + OUTPUT_MARKER.length + 1) : '';
        const errorAt = rest.indexOf(`${ERROR_MARKER}\n`);
        const body = errorAt >= 0 ? rest.slice(0, errorAt) : rest;
        const stderr = errorAt >= 0 ? rest.slice(errorAt + ERROR_MARKER.length + 1).trim() : '';
        if (resolved.type === 'missing') {
          const base = absolute.slice(absolute.lastIndexOf('/') + 1);
          const similar = similarNames(
            base,
            body.split('\n').filter((name) => name && name !== '.' && name !== '..'),
          );
          return errorResult(
            `Path not found: ${path}${similar.length > 0 ? `. Similar paths: ${similar.join(', ')}` : ''}`,
          );
        }
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
          const files = lines.map(stripDot);
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
          const counts: Record<string, number> = {};
          for (const line of lines) {
            const colon = line.lastIndexOf(':');
            const number = Number(line.slice(colon + 1));
            if (colon > 0 && number > 0) counts[stripDot(line.slice(0, colon))] = number;
          }
          const entries = Object.entries(counts);
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
        const matches: Match[] = [];
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
          if (entry)
            matches.push({
              ...entry,
              path: stripDot(entry.path),
              content: entry.content.slice(0, settings.maxMatchChars),
            });
        }
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
