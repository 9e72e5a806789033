// Content helpers shared by the three APIs: content (already typed by the API's schema) to text,
// and the one refusal for content the gateway cannot carry (images, audio, files).
import { invalidRequest } from './api-error.js';

/** A content part as the schemas type it: a text part, or a part of another type (no `text`). */
type ContentPart = { type: string; text: string } | { type: string };

/**
 * The text of a content value: a string, or text parts joined with a newline (as vLLM joins
 * them before templating). Parts of other types are refused with a 400 naming them: the
 * backends behind the gateway take text. `itemParam(index)` names a part in the API's style.
 */
export function textOfContent(
  content: string | readonly ContentPart[],
  itemParam: (index: number) => string,
): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  content.forEach((part, index) => {
    if ('text' in part) texts.push(part.text);
    else throw unsupportedContent(part.type, itemParam(index));
  });
  return texts.join('\n');
}

export function unsupportedContent(type: string, where: string) {
  return invalidRequest(
    `Content of type "${type}" at '${where}' is not supported by the shears gateway: the server behind it takes text only (text parts are supported).`,
    where,
    'unsupported_content',
  );
}
