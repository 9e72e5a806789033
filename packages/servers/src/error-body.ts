// What an HTTP error body says, in one line: the error map of the inference servers' own error
// shapes, each a schema: OpenAI's `{"error": {"message"}}` (OpenAI, vLLM, SGLang, OpenRouter),
// `{"error": "text"}`, `{"message"}`, FastAPI's `{"detail": "text"}` and its validation list
// `{"detail": [{"loc": [...], "msg"}]}` (transformers serve, vLLM's routes, most Python servers),
// or plain text. An error reported as "(no body)" when the server said why sends the user
// looking in the wrong place.
import { z } from 'zod';

const MAX_DETAIL = 500;

function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL)}…` : flat;
}

const said = z.string().trim().min(1);
const fastApiItem = z.union([
  said,
  z
    .looseObject({ loc: z.array(z.union([z.string(), z.number()])).nullish(), msg: said })
    .transform(({ loc, msg }) => (loc && loc.length > 0 ? `${loc.map(String).join('.')}: ${msg}` : msg)),
  z.unknown().transform((item) => JSON.stringify(item)),
]);

/** Each shape with what it says; the first that matches wins. */
const errorBodySchema = z.union([
  said,
  z.object({ error: said }).transform((body) => body.error),
  z.object({ error: z.looseObject({ message: said }) }).transform((body) => body.error.message),
  z.object({ message: said }).transform((body) => body.message),
  z.object({ detail: said }).transform((body) => body.detail),
  z.object({ detail: z.array(fastApiItem).min(1) }).transform((body) => body.detail.join('; ')),
  z.object({ detail: z.looseObject({}) }).transform((body) => JSON.stringify(body.detail)),
]);

/** The message of a parsed JSON error body, or undefined when it carries none. */
export function errorBodyDetail(body: unknown): string | undefined {
  const parsed = errorBodySchema.safeParse(body);
  return parsed.success ? clip(parsed.data) : undefined;
}
