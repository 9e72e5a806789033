// Unified diffs: rendering one for patch results, and parsing one that a model sends as a patch.

type Edit = { op: ' ' | '-' | '+'; text: string };

/** Line edit script from `before` to `after` (LCS over the part between common prefix and suffix). */
function diffLines(before: string[], after: string[]): Edit[] {
  let prefix = 0;
  while (prefix < before.length && prefix < after.length && before[prefix] === after[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < before.length - prefix &&
    suffix < after.length - prefix &&
    before[before.length - 1 - suffix] === after[after.length - 1 - suffix]
  )
    suffix++;
  const a = before.slice(prefix, before.length - suffix);
  const b = after.slice(prefix, after.length - suffix);
  const middle: Edit[] = [];
  if (a.length * b.length > 4_000_000) {
    // Too big for a table: show it as a block replacement.
    for (const text of a) middle.push({ op: '-', text });
    for (const text of b) middle.push({ op: '+', text });
  } else {
    const table: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
    for (let i = a.length - 1; i >= 0; i--)
      for (let j = b.length - 1; j >= 0; j--)
        table[i]![j] =
          a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        middle.push({ op: ' ', text: a[i]! });
        i++;
        j++;
      } else if (i < a.length && (j >= b.length || table[i + 1]![j]! >= table[i]![j + 1]!))
        middle.push({ op: '-', text: a[i++]! });
      else middle.push({ op: '+', text: b[j++]! });
    }
  }
  return [
    ...before.slice(0, prefix).map((text) => ({ op: ' ' as const, text })),
    ...middle,
    ...before.slice(before.length - suffix).map((text) => ({ op: ' ' as const, text })),
  ];
}

/** A unified diff (`--- a/path`, `+++ b/path`, 3 lines of context); empty when nothing changed. */
export function createUnifiedDiff(path: string, before: string, after: string, context = 3): string {
  if (before === after) return '';
  const edits = diffLines(before.split('\n'), after.split('\n'));
  const changed = edits.map((edit, index) => (edit.op !== ' ' ? index : -1)).filter((index) => index >= 0);
  const hunks: Array<[number, number]> = [];
  for (const index of changed) {
    const start = Math.max(0, index - context);
    const end = Math.min(edits.length, index + context + 1);
    const last = hunks[hunks.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else hunks.push([start, end]);
  }
  const out = [`--- a/${path}`, `+++ b/${path}`];
  for (const [start, end] of hunks) {
    let oldLine = 1;
    let newLine = 1;
    for (let index = 0; index < start; index++) {
      if (edits[index]!.op !== '+') oldLine++;
      if (edits[index]!.op !== '-') newLine++;
    }
    const slice = edits.slice(start, end);
    const oldCount = slice.filter((edit) => edit.op !== '+').length;
    const newCount = slice.filter((edit) => edit.op !== '-').length;
    out.push(
      `@@ -${oldCount === 0 ? oldLine - 1 : oldLine},${oldCount} +${newCount === 0 ? newLine - 1 : newLine},${newCount} @@`,
    );
    for (const edit of slice) out.push(`${edit.op}${edit.text}`);
  }
  return `${out.join('\n')}\n`;
}
