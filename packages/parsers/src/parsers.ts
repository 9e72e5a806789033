// The built-in parsers, by name: one ToolCallParserV1 per format, and lookup by name or alias.
import { NoSuchEntryError, type ToolCallParserV1 } from '@shears/core';
import { createParserFromFormat } from './engine/create-parser.js';
import type { ToolCallFormat } from './engine/format.js';
import { deepseekV3Format, deepseekV31Format } from './formats/deepseek.js';
import { glm45Format } from './formats/glm45.js';
import { hermesFormat, qwenFormat } from './formats/hermes.js';
import { kimiK2Format } from './formats/kimi-k2.js';
import { llama3JsonFormat } from './formats/llama3-json.js';
import { createMistralFormat, type MistralRenderVersion } from './formats/mistral.js';
import { qwen3CoderFormat } from './formats/qwen3-coder.js';

export const FORMATS: readonly ToolCallFormat[] = [
  hermesFormat,
  qwenFormat,
  qwen3CoderFormat,
  createMistralFormat(),
  llama3JsonFormat,
  deepseekV3Format,
  deepseekV31Format,
  kimiK2Format,
  glm45Format,
];

export const hermesParser: ToolCallParserV1 = createParserFromFormat(hermesFormat);
export const qwenParser: ToolCallParserV1 = createParserFromFormat(qwenFormat);
export const qwen3CoderParser: ToolCallParserV1 = createParserFromFormat(qwen3CoderFormat);
export const mistralParser: ToolCallParserV1 = createParserFromFormat(createMistralFormat());
export const llama3JsonParser: ToolCallParserV1 = createParserFromFormat(llama3JsonFormat);
export const deepseekV3Parser: ToolCallParserV1 = createParserFromFormat(deepseekV3Format);
export const deepseekV31Parser: ToolCallParserV1 = createParserFromFormat(deepseekV31Format);
export const kimiK2Parser: ToolCallParserV1 = createParserFromFormat(kimiK2Format);
export const glm45Parser: ToolCallParserV1 = createParserFromFormat(glm45Format);

export interface MistralParserSettings {
  /** Which tokenizer generation `render` writes: v3 (JSON array), v11 (`[CALL_ID]`, default) or v13. */
  renderVersion?: MistralRenderVersion;
}

/** A Mistral parser whose `render` writes the given tokenizer generation (parsing accepts all). */
export function createMistralParser(settings: MistralParserSettings = {}): ToolCallParserV1 {
  return createParserFromFormat(createMistralFormat(settings.renderVersion));
}

export const PARSERS: readonly ToolCallParserV1[] = [
  hermesParser,
  qwenParser,
  qwen3CoderParser,
  mistralParser,
  llama3JsonParser,
  deepseekV3Parser,
  deepseekV31Parser,
  kimiK2Parser,
  glm45Parser,
];

/** Names of the built-in parsers (aliases not included). */
export function listParsers(): string[] {
  return PARSERS.map((parser) => parser.id);
}

/** The built-in parser with this name or alias; throws NoSuchEntryError naming the valid ones. */
export function getParser(name: string): ToolCallParserV1 {
  const wanted = String(name).trim().toLowerCase();
  const found = PARSERS.find((parser) => parser.id === wanted || parser.aliases?.includes(wanted));
  if (found) return found;
  throw new NoSuchEntryError({ kind: 'tool-call parser', id: String(name), available: listParsers() });
}
