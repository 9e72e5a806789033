// Python-compatible text for what the model sees: hermes-agent builds its tool error results
// with `json.dumps` (", " / ": " separators, ASCII escapes) and lists tool names with a Python
// list repr. Models are trained on those bytes, so shears reproduces them exactly.

function escapeNonAscii(text: string): string {
  let out = '';
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    out += code > 0x7f ? `\\u${code.toString(16).padStart(4, '0')}` : text[index];
  }
  return out;
}

/** Python `json.dumps(value)` with default settings (ensure_ascii=True). */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return escapeNonAscii(JSON.stringify(value));
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .map(([key, entry]) => `${pythonJsonDumps(key)}: ${pythonJsonDumps(entry)}`)
      .join(', ')}}`;
  }
  return pythonJsonDumps(String(value));
}

/** Python `repr(text)` for a str. */
export function pythonStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '\\') out += '\\\\';
    else if (char === quote) out += `\\${quote}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return out + quote;
}

/** Python `repr(list_of_str)`, e.g. `['read_file', 'terminal']`. */
export function pythonListRepr(items: readonly string[]): string {
  return `[${items.map(pythonStringRepr).join(', ')}]`;
}
