// Shell quoting and small helpers shared by the file tools. Every command the tools run is
// POSIX sh that busybox understands, because sandboxes range from full Debian to busybox.

/** Quotes a value for POSIX sh as one word. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Splits `KEY:value` lines from a marker-delimited block of stdout. */
export function readFields(stdout: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/**
 * Runs a tool script in a subshell: its `exit` ends only the subshell, never a backend's
 * persistent shell session, and the backend's own traps are left alone. `after` runs once the
 * subshell is done, whatever way it ended (cleanup).
 */
export function inSubshell(script: string, after = ''): string {
  return `(\n${script}\n)${after ? `\n${after}` : ''}`;
}
