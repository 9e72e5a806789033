// Multi-file patches: the V4A format (`*** Begin Patch`) that models trained on hermes-agent and
// Codex emit, and plain unified diffs. Both parse to the same operations; hunks are located by
// their context (line numbers are only a hint), so a patch still applies after nearby edits.
import { FileToolError } from './file-tool-error.js';

export interface HunkLine {
  op: ' ' | '-' | '+';
  text: string;
}

export interface Hunk {
  /** `@@ text @@` context hint (V4A), searched for before the hunk. */
  anchor?: string;
  /** Old start line from a unified diff header. */
  oldStart?: number;
  lines: HunkLine[];
  /** The hunk is anchored at the end of the file (`*** End of File`). */
  endOfFile?: boolean;
}

export type PatchOperation =
  | { kind: 'add'; path: string; content: string }
  | { kind: 'delete'; path: string }
  | { kind: 'update'; path: string; moveTo?: string; hunks: Hunk[] };

const HEADER = /^\*\*\* (Update|Add|Delete) File: (.+)$/;
const MOVE_FILE = /^\*\*\* Move File: (.+?) -> (.+)$/;

/** Parses a V4A patch. Errors name the line that is wrong. */
export function parseV4aPatch(text: string): PatchOperation[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  let index = 0;
  while (index < lines.length && lines[index]!.trim() === '') index++;
  if (lines[index]?.trim() !== '*** Begin Patch')
    throw new FileToolError('Invalid patch: it must start with "*** Begin Patch"');
  index++;
  const operations: PatchOperation[] = [];
  let ended = false;
  while (index < lines.length) {
    const line = lines[index]!;
    if (line.trim() === '*** End Patch') {
      ended = true;
      break;
    }
    const move = MOVE_FILE.exec(line);
    if (move) {
      operations.push({ kind: 'update', path: move[1]!.trim(), moveTo: move[2]!.trim(), hunks: [] });
      index++;
      continue;
    }
    const header = HEADER.exec(line);
    if (!header) {
      if (line.trim() === '') {
        index++;
        continue;
      }
      throw new FileToolError(
        `Invalid patch line ${index + 1}: expected "*** Update File:", "*** Add File:", "*** Delete File:" or "*** End Patch", got ${JSON.stringify(line)}`,
      );
    }
    const [, kind, rawPath] = header;
    const path = rawPath!.trim();
    index++;
    if (kind === 'Delete') {
      operations.push({ kind: 'delete', path });
      continue;
    }
    if (kind === 'Add') {
      const body: string[] = [];
      while (index < lines.length && !lines[index]!.startsWith('*** ')) {
        const added = lines[index]!;
        if (!added.startsWith('+')) {
          if (added === '' && (index + 1 >= lines.length || lines[index + 1]!.startsWith('*** '))) {
            index++;
            continue;
          }
          throw new FileToolError(
            `Invalid patch line ${index + 1}: lines of an added file must start with "+", got ${JSON.stringify(added)}`,
          );
        }
        body.push(added.slice(1));
        index++;
      }
      operations.push({ kind: 'add', path, content: body.length > 0 ? `${body.join('\n')}\n` : '' });
      continue;
    }
    const update: PatchOperation & { kind: 'update' } = { kind: 'update', path, hunks: [] };
    if (lines[index]?.startsWith('*** Move to: ')) {
      update.moveTo = lines[index]!.slice('*** Move to: '.length).trim();
      index++;
    }
    let hunk: Hunk | undefined;
    while (index < lines.length) {
      const current = lines[index]!;
      if (current === '*** End of File') {
        if (hunk) hunk.endOfFile = true;
        index++;
        continue;
      }
      if (current.startsWith('*** ')) break;
      if (current.startsWith('@@')) {
        const anchor = current
          .replace(/^@@\s?/, '')
          .replace(/\s?@@$/, '')
          .trim();
        hunk = { anchor: anchor || undefined, lines: [] };
        update.hunks.push(hunk);
        index++;
        continue;
      }
      if (!hunk) {
        hunk = { lines: [] };
        update.hunks.push(hunk);
      }
      const op = current[0];
      if (op === ' ' || op === '-' || op === '+') hunk.lines.push({ op, text: current.slice(1) });
      else if (current === '') hunk.lines.push({ op: ' ', text: '' });
      else
        throw new FileToolError(
          `Invalid patch line ${index + 1}: hunk lines must start with " ", "-" or "+", got ${JSON.stringify(current)}`,
        );
      index++;
    }
    update.hunks = update.hunks.filter((candidate) => candidate.lines.length > 0 || candidate.anchor);
    if (update.hunks.length === 0 && !update.moveTo)
      throw new FileToolError(`Invalid patch: "*** Update File: ${path}" has no changes`);
    operations.push(update);
  }
  if (!ended) throw new FileToolError('Invalid patch: missing "*** End Patch"');
  if (operations.length === 0) throw new FileToolError('Invalid patch: it contains no file operations');
  return operations;
}

function diffPath(raw: string): string | undefined {
  const path = raw.split('\t')[0]!.trim();
  if (path === '/dev/null') return undefined;
  return path.replace(/^[ab]\//, '');
}

/** Parses a unified diff (`---`/`+++`/`@@ -a,b +c,d @@`), one or more files. */
export function parseUnifiedDiff(text: string): PatchOperation[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const operations: PatchOperation[] = [];
  let index = 0;
  while (index < lines.length) {
    if (!lines[index]!.startsWith('--- ') || !lines[index + 1]?.startsWith('+++ ')) {
      index++;
      continue;
    }
    const oldPath = diffPath(lines[index]!.slice(4));
    const newPath = diffPath(lines[index + 1]!.slice(4));
    index += 2;
    const hunks: Hunk[] = [];
    while (index < lines.length && lines[index]!.startsWith('@@')) {
      const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(lines[index]!);
      if (!header)
        throw new FileToolError(
          `Invalid diff line ${index + 1}: bad hunk header ${JSON.stringify(lines[index])}`,
        );
      let oldLeft = header[2] === undefined ? 1 : Number(header[2]);
      let newLeft = header[4] === undefined ? 1 : Number(header[4]);
      const hunk: Hunk = { oldStart: Number(header[1]), lines: [] };
      index++;
      while (index < lines.length && (oldLeft > 0 || newLeft > 0)) {
        const line = lines[index]!;
        if (line.startsWith('\\')) {
          index++;
          continue;
        }
        const op = line === '' ? ' ' : line[0];
        if (op !== ' ' && op !== '-' && op !== '+') break;
        hunk.lines.push({ op, text: line.slice(1) });
        if (op !== '+') oldLeft--;
        if (op !== '-') newLeft--;
        index++;
      }
      while (lines[index]?.startsWith('\\')) index++;
      hunks.push(hunk);
    }
    if (oldPath === undefined && newPath === undefined)
      throw new FileToolError('Invalid diff: both sides are /dev/null');
    if (oldPath === undefined) {
      const content = hunks.flatMap((hunk) =>
        hunk.lines.filter((line) => line.op === '+').map((line) => line.text),
      );
      operations.push({
        kind: 'add',
        path: newPath!,
        content: content.length > 0 ? `${content.join('\n')}\n` : '',
      });
    } else if (newPath === undefined) operations.push({ kind: 'delete', path: oldPath });
    else
      operations.push({
        kind: 'update',
        path: oldPath,
        moveTo: newPath !== oldPath ? newPath : undefined,
        hunks,
      });
  }
  if (operations.length === 0)
    throw new FileToolError('Invalid patch: no "--- a/file" / "+++ b/file" headers found');
  return operations;
}

/** Parses either format, chosen by its first line. */
export function parsePatch(text: string): PatchOperation[] {
  if (text.trimStart().startsWith('*** Begin Patch')) return parseV4aPatch(text);
  if (/^--- /m.test(text) && /^\+\+\+ /m.test(text)) return parseUnifiedDiff(text);
  throw new FileToolError(
    'Invalid patch: expected a V4A patch ("*** Begin Patch" ... "*** End Patch") or a unified diff ("--- a/file", "+++ b/file", "@@ ... @@")',
  );
}

function findBlock(
  lines: readonly string[],
  block: readonly string[],
  from: number,
  normalize: (line: string) => string,
): number[] {
  const found: number[] = [];
  const wanted = block.map(normalize);
  for (let start = from; start + wanted.length <= lines.length; start++) {
    let ok = true;
    for (let offset = 0; offset < wanted.length; offset++) {
      if (normalize(lines[start + offset]!) !== wanted[offset]) {
        ok = false;
        break;
      }
    }
    if (ok) found.push(start);
  }
  return found;
}

/** Applies an update's hunks to `content`; throws naming the hunk that does not fit. */
export function applyHunks(path: string, content: string, hunks: readonly Hunk[]): string {
  const hadFinalNewline = content.endsWith('\n');
  const lines = content === '' ? [] : (hadFinalNewline ? content.slice(0, -1) : content).split('\n');
  let cursor = 0;
  const normalizers = [
    (line: string) => line,
    (line: string) => line.trimEnd(),
    (line: string) => line.trim(),
  ];
  for (const [hunkIndex, hunk] of hunks.entries()) {
    let searchFrom = cursor;
    if (hunk.anchor) {
      const anchorAt = lines.findIndex(
        (line, index) => index >= cursor && line.trim().includes(hunk.anchor!.trim()),
      );
      const anywhere =
        anchorAt >= 0 ? anchorAt : lines.findIndex((line) => line.trim().includes(hunk.anchor!.trim()));
      if (anywhere < 0)
        throw new FileToolError(
          `Patch failed for ${path}: hunk ${hunkIndex + 1} context "@@ ${hunk.anchor} @@" not found in the file`,
        );
      searchFrom = anywhere + 1;
    }
    const oldBlock = hunk.lines.filter((line) => line.op !== '+').map((line) => line.text);
    const newBlock = hunk.lines.filter((line) => line.op !== '-').map((line) => line.text);
    if (oldBlock.length === 0) {
      // Addition-only hunk: after the anchor, at the diff's line, or at the end of the file.
      const at = hunk.anchor
        ? searchFrom
        : hunk.oldStart !== undefined && !hunk.endOfFile
          ? Math.min(hunk.oldStart, lines.length)
          : lines.length;
      lines.splice(at, 0, ...newBlock);
      cursor = at + newBlock.length;
      continue;
    }
    let position: number | undefined;
    for (const normalize of normalizers) {
      let candidates = findBlock(lines, oldBlock, searchFrom, normalize);
      if (candidates.length === 0 && searchFrom > 0) candidates = findBlock(lines, oldBlock, 0, normalize);
      if (candidates.length === 0) continue;
      if (hunk.endOfFile)
        candidates = candidates
          .filter((start) => start + oldBlock.length === lines.length)
          .concat(candidates)
          .slice(0, 1);
      if (hunk.oldStart !== undefined) {
        const target = hunk.oldStart - 1;
        candidates.sort((a, b) => Math.abs(a - target) - Math.abs(b - target));
      }
      position = candidates[0];
      break;
    }
    if (position === undefined) {
      const preview = oldBlock.slice(0, 3).join('\n');
      throw new FileToolError(
        `Patch failed for ${path}: hunk ${hunkIndex + 1} does not match the file. Expected lines:\n${preview}`,
      );
    }
    lines.splice(position, oldBlock.length, ...newBlock);
    cursor = position + newBlock.length;
  }
  if (lines.length === 0) return '';
  return `${lines.join('\n')}${hadFinalNewline || content === '' ? '\n' : ''}`;
}
