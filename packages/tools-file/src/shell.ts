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
