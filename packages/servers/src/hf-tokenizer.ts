// A TokenizerV1 over Hugging Face tokenizer files: `@huggingface/tokenizers` for encode/decode
// and `@huggingface/jinja` for the model's own chat template, loaded from a local
// `tokenizer.json` + `tokenizer_config.json` (+ `chat_template.jinja`, where transformers 5 saves
// the template) (never from the network).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import {
  type ChatMessage,
  type ChatTemplateOptions,
  ConfigError,
  InvalidArgumentError,
  messageText,
  parseJson,
  safeParseJson,
  type TokenizerV1,
} from '@shears/core';

export type HfTokenizerSettings =
  | {
      /** Parsed `tokenizer.json`. */
      tokenizerJson: Record<string, unknown>;
      /** Parsed `tokenizer_config.json` (carries the chat template). */
      tokenizerConfig: Record<string, unknown>;
      id?: string;
      /** Overrides the template in the config (e.g. a fixed or tool-use variant). */
      chatTemplate?: string;
      toolArguments?: ToolArgumentsMode;
    }
  | {
      /** A folder holding `tokenizer.json` and `tokenizer_config.json`. */
      dir: string;
      id?: string;
      chatTemplate?: string;
      toolArguments?: ToolArgumentsMode;
    };

/**
 * How assistant tool-call arguments reach the template. `object`: parsed into a dict, as vLLM
 * does before templating (templates such as Qwen2.5's and Llama 3.1's write
 * `arguments | tojson` and would otherwise double-encode a string). `string`: the JSON text as
 * is. `auto` (default): `string` when the template tests `arguments is string` / `is mapping`
 * itself (Qwen3), which keeps the text byte-exact; `object` otherwise.
 */
export type ToolArgumentsMode = 'auto' | 'string' | 'object';

/** True when the template checks the arguments' type itself and writes strings as they are. */
function templateTakesStringArguments(source: string): boolean {
  return /arguments\s+is\s+(?:not\s+)?(?:string|mapping)\b/.test(source);
}

/** A Hugging Face tokenizer: the TokenizerV1 contract plus the added-token table incremental encoding needs. */
export interface HfTokenizer extends TokenizerV1 {
  /** Added tokens (special or not, without lstrip/rstrip) by their text: tokenization never merges across them. */
  readonly addedTokens: ReadonlyMap<string, number>;
  /** Token id of a token string, if it is in the vocabulary. */
  tokenToId(token: string): number | undefined;
}

// End-of-turn markers of common chat templates; the first one the template uses leads stopTokenIds.
const END_OF_TURN_CANDIDATES = [
  '<|im_end|>',
  '<|eot_id|>',
  '<|eom_id|>',
  '<end_of_turn>',
  '<|end|>',
  '<|return|>',
  '<|endoftext|>',
  '<|end_of_text|>',
  '</s>',
];

function readJsonFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError({
      message: `Cannot read tokenizer file ${path}: expected a folder with tokenizer.json and tokenizer_config.json`,
      issues: [{ path, message: 'file not readable' }],
      cause,
    });
  }
  const value = parseJson(text, { source: path });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError({
      message: `${path} must hold a JSON object`,
      issues: [{ path, message: 'not an object' }],
    });
  }
  return value as Record<string, unknown>;
}

function readTextIfPresent(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError({
      message: `Cannot read chat template file ${path}`,
      issues: [{ path, message: 'file not readable' }],
      cause,
    });
  }
}

/**
 * The chat template where transformers saves it. transformers 5 (and 4.43+) writes
 * `chat_template.jinja` beside `tokenizer_config.json` (no `chat_template` field any more), and
 * named variants as `additional_chat_templates/<name>.jinja`; older processors wrote
 * `chat_template.json`. As in transformers, the file wins over the config's field.
 */
function withTemplateFiles(config: Record<string, unknown>, dir: string): Record<string, unknown> {
  let main = readTextIfPresent(join(dir, 'chat_template.jinja'));
  if (main === undefined) {
    const legacy = readTextIfPresent(join(dir, 'chat_template.json'));
    if (legacy !== undefined) {
      const parsed = parseJson(legacy, { source: join(dir, 'chat_template.json') }) as {
        chat_template?: unknown;
      };
      if (typeof parsed?.chat_template === 'string') main = parsed.chat_template;
    }
  }
  const named: Array<{ name: string; template: string }> = [];
  const extraDir = join(dir, 'additional_chat_templates');
  if (existsSync(extraDir) && statSync(extraDir).isDirectory()) {
    for (const file of readdirSync(extraDir).sort()) {
      if (!file.endsWith('.jinja')) continue;
      named.push({
        name: file.slice(0, -'.jinja'.length),
        template: readFileSync(join(extraDir, file), 'utf8'),
      });
    }
  }
  if (main === undefined && named.length === 0) return config;
  if (named.length === 0) return { ...config, chat_template: main };
  const fromConfig = pickTemplate(config, false);
  const base = main ?? fromConfig;
  return {
    ...config,
    chat_template: [...(base !== undefined ? [{ name: 'default', template: base }] : []), ...named],
  };
}

function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  // Older configs store special tokens as AddedToken objects: { content: "<s>", ... }.
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { content?: unknown }).content === 'string'
  ) {
    return (value as { content: string }).content;
  }
  return undefined;
}

function pickTemplate(config: Record<string, unknown>, hasTools: boolean): string | undefined {
  const template = config.chat_template;
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) {
    // Named templates (transformers' list form): prefer `tool_use` when tools are offered.
    const named = new Map<string, string>();
    for (const entry of template) {
      if (entry && typeof entry.name === 'string' && typeof entry.template === 'string')
        named.set(entry.name, entry.template);
    }
    return (
      (hasTools ? named.get('tool_use') : undefined) ?? named.get('default') ?? named.values().next().value
    );
  }
  return undefined;
}

/**
 * The template renders text: an image (or any non-text part) would vanish from the prompt and the
 * token record without a trace, so it is refused, naming the message and the part.
 */
function refuseNonTextParts(messages: ChatMessage[]): void {
  messages.forEach((message, index) => {
    if (!Array.isArray(message.content)) return;
    const part = message.content.find((entry) => entry.type !== 'text');
    if (part)
      throw new InvalidArgumentError({
        argument: `messages[${index}].content`,
        value: part.type,
        message: `applyChatTemplate: message ${index} (${message.role}) has a "${part.type}" part; this tokenizer renders text only, so it would be dropped from the prompt and the token record. Give the model text (for MCP tools: images: note) or use a multimodal model path`,
      });
  });
}

/** Messages as templates expect them: text content (null becomes ''), other keys kept. */
function templateMessages(messages: ChatMessage[], argumentsAsObjects: boolean): Record<string, unknown>[] {
  return messages.map((message) => {
    const copy: Record<string, unknown> = { ...message };
    copy.content = typeof message.content === 'string' ? message.content : messageText(message);
    if (argumentsAsObjects && Array.isArray(message.tool_calls))
      copy.tool_calls = message.tool_calls.map((call) => {
        const parsed = safeParseJson(call.function?.arguments ?? '');
        // Arguments that are not a JSON object stay text (vLLM would fail on them).
        if (
          !parsed.success ||
          typeof parsed.value !== 'object' ||
          parsed.value === null ||
          Array.isArray(parsed.value)
        )
          return call;
        return { ...call, function: { ...call.function, arguments: parsed.value } };
      });
    return copy;
  });
}

export function createHfTokenizer(settings: HfTokenizerSettings): HfTokenizer {
  let tokenizerJson: Record<string, unknown>;
  let tokenizerConfig: Record<string, unknown>;
  let defaultId: string;
  if ('dir' in settings) {
    if (typeof settings.dir !== 'string' || settings.dir.length === 0) {
      throw new InvalidArgumentError({
        argument: 'dir',
        value: settings.dir,
        message: 'createHfTokenizer: "dir" must be a folder path',
      });
    }
    tokenizerJson = readJsonFile(join(settings.dir, 'tokenizer.json'));
    tokenizerConfig = withTemplateFiles(
      readJsonFile(join(settings.dir, 'tokenizer_config.json')),
      settings.dir,
    );
    defaultId = settings.dir;
  } else {
    if (typeof settings.tokenizerJson !== 'object' || settings.tokenizerJson === null) {
      throw new InvalidArgumentError({
        argument: 'tokenizerJson',
        value: settings.tokenizerJson,
        message: 'createHfTokenizer: pass { tokenizerJson, tokenizerConfig } (parsed objects) or { dir }',
      });
    }
    tokenizerJson = settings.tokenizerJson;
    tokenizerConfig = settings.tokenizerConfig ?? {};
    defaultId =
      typeof tokenizerConfig.name_or_path === 'string' ? tokenizerConfig.name_or_path : 'hf-tokenizer';
  }

  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
  } catch (cause) {
    throw new ConfigError({
      message: `Cannot load tokenizer "${settings.id ?? defaultId}": ${cause instanceof Error ? cause.message : String(cause)}`,
      cause,
    });
  }
  const addedTokens = new Map<string, number>();
  const addedList = Array.isArray(tokenizerJson.added_tokens) ? tokenizerJson.added_tokens : [];
  for (const entry of addedList as Array<{
    id?: unknown;
    content?: unknown;
    lstrip?: unknown;
    rstrip?: unknown;
  }>) {
    // Tokens that strip neighbouring spaces change the text around them: not clean boundaries.
    if (entry.lstrip === true || entry.rstrip === true) continue;
    if (typeof entry.content === 'string' && typeof entry.id === 'number')
      addedTokens.set(entry.content, entry.id);
  }

  const specialTokenVariables: Record<string, string> = {};
  for (const key of [
    'bos_token',
    'eos_token',
    'unk_token',
    'pad_token',
    'sep_token',
    'cls_token',
    'mask_token',
  ]) {
    const text = tokenText(tokenizerConfig[key]);
    if (text !== undefined) specialTokenVariables[key] = text;
  }

  const templates = new Map<string, Template>();
  const compile = (source: string): Template => {
    let template = templates.get(source);
    if (!template) {
      try {
        template = new Template(source);
      } catch (cause) {
        throw new ConfigError({
          message: `The chat template of tokenizer "${defaultId}" does not compile: ${String(cause)}`,
          cause,
        });
      }
      templates.set(source, template);
    }
    return template;
  };

  const baseTemplate = settings.chatTemplate ?? pickTemplate(tokenizerConfig, false) ?? '';
  const stopTokenIds: number[] = [];
  const pushStop = (text: string | undefined) => {
    if (text === undefined) return;
    const id = addedTokens.get(text) ?? tokenizer.token_to_id(text);
    if (id !== undefined && !stopTokenIds.includes(id)) stopTokenIds.push(id);
  };
  for (const candidate of END_OF_TURN_CANDIDATES) if (baseTemplate.includes(candidate)) pushStop(candidate);
  pushStop(specialTokenVariables.eos_token);

  return {
    specificationVersion: 'v1',
    id: settings.id ?? defaultId,
    addedTokens,
    stopTokenIds,
    tokenToId: (token) => addedTokens.get(token) ?? tokenizer.token_to_id(token),
    encode(text, options) {
      if (typeof text !== 'string') {
        throw new InvalidArgumentError({
          argument: 'text',
          value: text,
          message: 'encode: text must be a string',
        });
      }
      // HF semantics: special tokens (e.g. Llama's BOS) are added unless asked not to.
      return tokenizer.encode(text, { add_special_tokens: options?.addSpecialTokens ?? true }).ids;
    },
    decode(ids, options) {
      return tokenizer.decode([...ids], { skip_special_tokens: options?.skipSpecialTokens ?? false });
    },
    applyChatTemplate(messages: ChatMessage[], options: ChatTemplateOptions = {}) {
      if (!Array.isArray(messages)) {
        throw new InvalidArgumentError({
          argument: 'messages',
          value: messages,
          message: 'applyChatTemplate: messages must be an array',
        });
      }
      refuseNonTextParts(messages);
      const hasTools = (options.tools?.length ?? 0) > 0;
      const source = settings.chatTemplate ?? pickTemplate(tokenizerConfig, hasTools);
      const toolArguments = settings.toolArguments ?? 'auto';
      if (!source) {
        throw new ConfigError({
          message: `Tokenizer "${settings.id ?? defaultId}" has no chat template (neither chat_template.jinja nor chat_template in tokenizer_config.json); pass settings.chatTemplate`,
        });
      }
      return compile(source).render({
        ...specialTokenVariables,
        messages: templateMessages(
          messages,
          toolArguments === 'object' || (toolArguments === 'auto' && !templateTakesStringArguments(source)),
        ),
        // Templates test `if tools`, so no tools must be undefined rather than [].
        tools: hasTools ? options.tools : undefined,
        add_generation_prompt: options.addGenerationPrompt ?? false,
        ...options.variables,
      });
    },
  };
}
