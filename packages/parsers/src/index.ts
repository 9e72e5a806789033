// @shears/parsers: tool-call parsers that turn raw completion text into calls (whole text or
// streamed) and render calls back into each model's own format.
import plugin from './plugin.js';

export { createParserFromFormat, stripEndTokens } from './engine/create-parser.js';
export type { FormatContext, Step, StepItem, ToolCallFormat } from './engine/format.js';
export type { MistralRenderVersion } from './formats/mistral.js';
export type { PyValue } from './json/python-json.js';
export {
  fromPyValue,
  PyNumber,
  pyDumps,
  pyFloatRepr,
  pyJsonLoads,
  pyQuote,
  toPyValue,
} from './json/python-json.js';
export { pyLiteralEval } from './json/python-literal.js';
export type { MistralParserSettings } from './parsers.js';
export {
  createMistralParser,
  deepseekV3Parser,
  deepseekV31Parser,
  getParser,
  glm45Parser,
  hermesParser,
  kimiK2Parser,
  listParsers,
  llama3JsonParser,
  mistralParser,
  PARSERS,
  qwen3CoderParser,
  qwenParser,
} from './parsers.js';
export { plugin };
export default plugin;
