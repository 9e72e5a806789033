// Content helpers shared by the three APIs: content (already typed by the API's schema) to text,
// and the one refusal for content the gateway cannot carry (images, audio, files).
import { type ApiStyle, invalidRequest } from './api-error.js';

/** A content part as the schemas type it: a text part, or a part of another type (no `text`). */
type ContentPart = { type: string; text: string } | { type: string };

/**
 * The text of a content value (at `param`): a string, or text parts joined with a newline (as
 * vLLM joins them before templating). Parts of other types are refused with a 400 naming them
 * in the API's `style`: the backends behind the gateway take text.
 */
export function textOfContent(
  content: string | readonly ContentPart[],
  param: string,
  style: ApiStyle,
): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (let index = 0; index < content.length; index++) {
    const part = content[index] as ContentPart;
    if ('text' in part) texts.push(part.text);
    else throw unsupportedContent(part.type, style === 'openai' ? `${param}[${index}]` : `${param}.${index}`);
  }
  return texts.join('\n');
}

export function unsupportedContent(type: string, where: string) {
  return invalidRequest(
    `Content of type "${type}" at '${where}' is not supported by the shears gateway: the server behind it takes text only (text parts are supported).`,
    where,
    'unsupported_content',
  );
}
