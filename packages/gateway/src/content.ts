// Content helpers shared by the three APIs: message content to text, tool-call validation and
// the one refusal for content the gateway cannot carry (images, audio, files).
import type { ToolCall } from '@shears/core';
import { invalidRequest } from './api-error.js';
import { describe, isRecord } from './dialect.js';

/** Text part types of the three APIs. */
const TEXT_PARTS = new Set(['text', 'input_text', 'output_text']);

/**
 * The text of a content value: a string, or an array of text parts joined with a newline (as
 * vLLM joins them before templating). Other part types are refused with a 400 naming them:
 * the backends behind the gateway take text.
 */
export function contentToText(
  content: unknown,
  param: string,
  options: { allowNull?: boolean } = {},
): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) {
    if (options.allowNull) return '';
    throw invalidRequest(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  }
  if (!Array.isArray(content))
    throw invalidRequest(
      `Invalid type for '${param}': expected a string or an array of content parts, but got ${describe(content)}.`,
      param,
      'invalid_type',
    );
  const texts: string[] = [];
  content.forEach((part, index) => {
    const where = `${param}[${index}]`;
    if (!isRecord(part) || typeof part.type !== 'string')
      throw invalidRequest(
        `Invalid content part at '${where}': expected an object with a "type".`,
        where,
        'invalid_type',
      );
    if (TEXT_PARTS.has(part.type)) {
      if (typeof part.text !== 'string')
        throw invalidRequest(
          `Invalid content part at '${where}': "text" must be a string.`,
          `${where}.text`,
          'invalid_type',
        );
      texts.push(part.text);
      return;
    }
    throw unsupportedContent(part.type, where);
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

/** OpenAI-shaped tool calls from a harness's history (`tool_calls` of an assistant message). */
export function toolCallsFrom(value: unknown, param: string): ToolCall[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value))
    throw invalidRequest(`Invalid type for '${param}': expected an array.`, param, 'invalid_type');
  if (value.length === 0) return undefined;
  return value.map((call, index) => {
    const where = `${param}[${index}]`;
    if (!isRecord(call) || !isRecord(call.function))
      throw invalidRequest(
        `Invalid tool call at '${where}': expected {id, type: "function", function: {name, arguments}}.`,
        where,
      );
    const { name } = call.function;
    let args = call.function.arguments;
    if (typeof name !== 'string' || name.length === 0)
      throw invalidRequest(`Missing required parameter: '${where}.function.name'.`, `${where}.function.name`);
    if (isRecord(args)) args = JSON.stringify(args);
    if (args === undefined || args === null) args = '';
    if (typeof args !== 'string')
      throw invalidRequest(
        `Invalid type for '${where}.function.arguments': expected a string.`,
        `${where}.function.arguments`,
        'invalid_type',
      );
    return {
      id: typeof call.id === 'string' ? call.id : '',
      type: 'function' as const,
      function: { name, arguments: args },
    };
  });
}
