// Server-sent events for the three APIs. ServerV1 returns whole completions, so a stream is
// replayed from the complete response: text is cut into small deltas at word boundaries (never
// inside a UTF-16 surrogate pair) so that harness parsers see the many-delta shape real
// servers send.

/** One SSE event; `name` becomes the `event:` line (Anthropic and Responses name theirs). */
export function sseEvent(name: string | undefined, data: unknown): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return name === undefined ? `data: ${payload}\n\n` : `event: ${name}\ndata: ${payload}\n\n`;
}

/** An SSE comment: ignored by every SSE parser, it keeps idle connections alive. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n';

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Cuts text into deltas of about `size` characters. A cut prefers the end of a run of
 * whitespace within the window and never separates a surrogate pair. Joining the pieces gives
 * the text back exactly; empty text gives no pieces.
 */
export function splitForStream(text: string, size: number): string[] {
  if (text.length === 0) return [];
  if (text.length <= size) return [text];
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      // Prefer to end right after whitespace (a word boundary), as tokenizers mostly do.
      for (let cut = end; cut > start; cut--) {
        const code = text.charCodeAt(cut - 1);
        if (code === 32 || code === 10 || code === 9) {
          end = cut;
          break;
        }
      }
      if (isHighSurrogate(text.charCodeAt(end - 1))) end = end - 1 > start ? end - 1 : end + 1;
    }
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}
