// What an HTTP error body says, in one line, whatever shape the server gives it: OpenAI's
// `{"error": {"message"}}`, `{"error": "text"}`, `{"message"}`, FastAPI's `{"detail": "text"}` and
// its validation list `{"detail": [{"loc": [...], "msg"}]}` (transformers serve, vLLM's routes,
// most Python servers), or plain text. An error reported as "(no body)" when the server said why
// sends the user looking in the wrong place.
const MAX_DETAIL = 500;

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL)}…` : flat;
}

function fastApiItem(item: unknown): string | undefined {
  if (typeof item === 'string') return item;
  if (typeof item !== 'object' || item === null) return undefined;
  const { loc, msg } = item as { loc?: unknown; msg?: unknown };
  if (typeof msg !== 'string') return JSON.stringify(item);
  return Array.isArray(loc) && loc.length > 0 ? `${loc.map(String).join('.')}: ${msg}` : msg;
}

/** The message of a parsed JSON error body, or undefined when it carries none. */
export function errorBodyDetail(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() ? clip(body) : undefined;
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as { error?: unknown; message?: unknown; detail?: unknown };
  const nested = record.error;
  if (typeof nested === 'string' && nested.trim()) return clip(nested);
  if (typeof nested === 'object' && nested !== null) {
    const message = (nested as { message?: unknown }).message;
    if (typeof message === 'string' && message.trim()) return clip(message);
  }
  if (typeof record.message === 'string' && record.message.trim()) return clip(record.message);
  const detail = record.detail;
  if (typeof detail === 'string' && detail.trim()) return clip(detail);
  if (Array.isArray(detail) && detail.length > 0) {
    const items = detail.map(fastApiItem).filter((item): item is string => item !== undefined);
    if (items.length > 0) return clip(items.join('; '));
  }
  if (typeof detail === 'object' && detail !== null) return clip(JSON.stringify(detail));
  return undefined;
}
