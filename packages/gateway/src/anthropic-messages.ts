// Anthropic Messages (`POST /v1/messages`, `POST /v1/messages/count_tokens`), as Claude Code and
// the `@anthropic-ai/sdk` speak it: system blocks, system messages inside `messages` (Claude
// Code's mid-conversation system beta), `tool_use` / `tool_result` blocks, thinking blocks, and
// the streaming events `message_start`, `ping`, `content_block_start/delta/stop`,
// `message_delta`, `message_stop`. Shapes follow the official SDK's types.
import { createHash } from 'node:crypto';
import type { ChatMessage, ChatResponse, ToolCall, ToolChoice, ToolSchema } from '@shears/core';
import {
  anthropicErrorType,
  type GatewayApiError,
  invalidRequest,
  renderAnthropicError,
} from './api-error.js';
import { contentToText, unsupportedContent } from './content.js';
import {
  argumentsObject,
  contentText,
  type Dialect,
  describe,
  isRecord,
  optionalBoolean,
  optionalInteger,
  optionalNumber,
  type ParsedRequest,
  type ResponseMeta,
  reasoningOf,
  requireObjectBody,
  stopList,
  unknownKeys,
} from './dialect.js';
import { splitForStream, sseEvent } from './sse.js';

type ParsedMessagesRequest = ParsedRequest;

const KNOWN = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'tools',
  'tool_choice',
  'stream',
  'temperature',
  'top_p',
  'stop_sequences',
]);

// Anthropic reports validation failures as "<field path>: <problem>".
const fieldError = (path: string, problem: string) => invalidRequest(`${path}: ${problem}`, path);

function blockList(content: unknown, path: string): Record<string, unknown>[] {
  if (!Array.isArray(content))
    throw fieldError(
      path,
      `Input should be a valid string or list of content blocks (got ${describe(content)})`,
    );
  return content.map((block, index) => {
    if (!isRecord(block) || typeof block.type !== 'string')
      throw fieldError(`${path}.${index}`, 'Input should be a content block object with a "type"');
    return block;
  });
}

function textOf(block: Record<string, unknown>, path: string): string {
  if (typeof block.text !== 'string') throw fieldError(`${path}.text`, 'Field required');
  return block.text;
}

function toolResultText(block: Record<string, unknown>, path: string): string {
  const content = block.content;
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return contentToText(content, `${path}.content`);
}

function systemText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  return blockList(value, 'system')
    .map((block, index) => {
      if (block.type !== 'text') throw unsupportedContent(String(block.type), `system.${index}`);
      return textOf(block, `system.${index}`);
    })
    .join('\n');
}

function userMessages(content: unknown, path: string): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: ChatMessage[] = [];
  let texts: string[] = [];
  const flush = () => {
    if (texts.length > 0) out.push({ role: 'user', content: texts.join('\n') });
    texts = [];
  };
  blockList(content, path).forEach((block, index) => {
    const where = `${path}.${index}`;
    if (block.type === 'text') texts.push(textOf(block, where));
    else if (block.type === 'tool_result') {
      if (typeof block.tool_use_id !== 'string') throw fieldError(`${where}.tool_use_id`, 'Field required');
      flush();
      const message: ChatMessage = {
        role: 'tool',
        tool_call_id: block.tool_use_id,
        content: toolResultText(block, where),
      };
      if (block.is_error === true) message.is_error = true;
      out.push(message);
    } else throw unsupportedContent(block.type as string, where);
  });
  flush();
  return out;
}

function assistantMessage(content: unknown, path: string): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const message: ChatMessage = { role: 'assistant', content: null };
  const texts: string[] = [];
  const thinking: string[] = [];
  const calls: ToolCall[] = [];
  blockList(content, path).forEach((block, index) => {
    const where = `${path}.${index}`;
    switch (block.type) {
      case 'text':
        texts.push(textOf(block, where));
        return;
      case 'thinking':
        if (typeof block.thinking !== 'string') throw fieldError(`${where}.thinking`, 'Field required');
        thinking.push(block.thinking);
        return;
      case 'redacted_thinking':
        return;
      case 'tool_use':
        if (typeof block.id !== 'string') throw fieldError(`${where}.id`, 'Field required');
        if (typeof block.name !== 'string') throw fieldError(`${where}.name`, 'Field required');
        calls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        });
        return;
      default:
        throw unsupportedContent(block.type as string, where);
    }
  });
  if (texts.length > 0) message.content = texts.join('');
  if (thinking.length > 0) message.reasoning_content = thinking.join('\n\n');
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function toMessages(value: unknown, system: string | undefined): ChatMessage[] {
  if (value === undefined) throw fieldError('messages', 'Field required');
  if (!Array.isArray(value))
    throw fieldError('messages', `Input should be a valid list (got ${describe(value)})`);
  if (value.length === 0) throw fieldError('messages', 'at least one message is required');
  const messages: ChatMessage[] = system !== undefined ? [{ role: 'system', content: system }] : [];
  value.forEach((raw, index) => {
    const path = `messages.${index}`;
    if (!isRecord(raw)) throw fieldError(path, 'Input should be a valid dictionary');
    if (raw.content === undefined) throw fieldError(`${path}.content`, 'Field required');
    switch (raw.role) {
      case 'user':
        messages.push(...userMessages(raw.content, `${path}.content`));
        return;
      case 'assistant':
        messages.push(assistantMessage(raw.content, `${path}.content`));
        return;
      case 'system':
        messages.push({
          role: 'system',
          content:
            typeof raw.content === 'string' ? raw.content : contentToText(raw.content, `${path}.content`),
        });
        return;
      default:
        throw fieldError(
          `${path}.role`,
          `Input should be 'user', 'assistant' or 'system' (got ${JSON.stringify(raw.role)})`,
        );
    }
  });
  return messages;
}

function toTools(value: unknown, ignored: string[]): ToolSchema[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw fieldError('tools', 'Input should be a valid list');
  const tools: ToolSchema[] = [];
  value.forEach((tool, index) => {
    const path = `tools.${index}`;
    if (!isRecord(tool)) throw fieldError(path, 'Input should be a valid dictionary');
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      // Server tools (web search, code execution, …) run at Anthropic; nothing here can run them.
      ignored.push(`tools[${index}] (${String(tool.type)})`);
      return;
    }
    if (typeof tool.name !== 'string' || tool.name.length === 0)
      throw fieldError(`${path}.name`, 'Field required');
    if (!isRecord(tool.input_schema)) throw fieldError(`${path}.input_schema`, 'Field required');
    // Key order as OpenAI writes tools (name, description, parameters): templates render them with tojson.
    const schema: ToolSchema = { type: 'function', function: { name: tool.name } };
    if (typeof tool.description === 'string') schema.function.description = tool.description;
    schema.function.parameters = tool.input_schema;
    tools.push(schema);
  });
  return tools.length > 0 ? tools : undefined;
}

function toToolChoice(value: unknown, ignored: string[]): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw fieldError('tool_choice', 'Input should be a valid dictionary');
  if (value.disable_parallel_tool_use === true)
    ignored.push('tool_choice.disable_parallel_tool_use (not enforced on the model)');
  switch (value.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      if (typeof value.name !== 'string') throw fieldError('tool_choice.name', 'Field required');
      return { type: 'function', function: { name: value.name } };
    default:
      throw fieldError(
        'tool_choice.type',
        `Input should be 'auto', 'any', 'tool' or 'none' (got ${JSON.stringify(value.type)})`,
      );
  }
}

function parse(rawBody: unknown, options: { countTokens: boolean }): ParsedMessagesRequest {
  const body = requireObjectBody(rawBody);
  const ignoredFields = unknownKeys(body, KNOWN);
  if (typeof body.model !== 'string') throw fieldError('model', 'Field required');
  let maxTokens: number | undefined;
  if (!options.countTokens) {
    if (body.max_tokens === undefined) throw fieldError('max_tokens', 'Field required');
    maxTokens = optionalInteger(body, 'max_tokens', 1);
  }
  const messages = toMessages(body.messages, systemText(body.system));
  const temperature = optionalNumber(body, 'temperature');
  if (temperature !== undefined && (temperature < 0 || temperature > 1))
    throw fieldError(
      'temperature',
      `Input should be less than or equal to 1 and at least 0 (got ${temperature})`,
    );
  const topP = optionalNumber(body, 'top_p');
  const tools = toTools(body.tools, ignoredFields);
  const toolChoice = toToolChoice(body.tool_choice, ignoredFields);
  const stop = stopList(body.stop_sequences, 'stop_sequences');
  return {
    chat: {
      messages,
      ...(tools ? { tools } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(topP !== undefined ? { topP } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(stop ? { stop } : {}),
    },
    stream: options.countTokens ? false : (optionalBoolean(body, 'stream') ?? false),
    model: body.model,
    ignoredFields,
  };
}

const parseMessagesRequest = (body: unknown) => parse(body, { countTokens: false });
export const parseCountTokensRequest = (body: unknown) => parse(body, { countTokens: true });

/** An opaque signature for a thinking block (the real API requires the field; nothing verifies ours). */
function signatureOf(thinking: string): string {
  return `shears-${createHash('sha256').update(thinking).digest('base64url').slice(0, 32)}`;
}

type Block = Record<string, unknown> & { type: string };

/** The JSON text streamed for a tool use: the model's own text when it is an object, else `{}`. */
const INPUT_JSON = Symbol('input json');

/** Content blocks in the model's order: thinking, text, tool uses. */
function contentBlocks(response: ChatResponse): Block[] {
  const message = response.choices[0]?.message ?? { role: 'assistant', content: '' };
  const blocks: Block[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== undefined)
    blocks.push({ type: 'thinking', thinking: reasoning, signature: signatureOf(reasoning) });
  const text = contentText(message);
  if (text !== '') blocks.push({ type: 'text', text });
  for (const call of message.tool_calls ?? []) {
    // Anthropic's `input` is an object; arguments that are not one reach the harness as {}.
    const input = argumentsObject(call.function.arguments);
    const block: Block = { type: 'tool_use', id: call.id, name: call.function.name, input: input ?? {} };
    Object.defineProperty(block, INPUT_JSON, {
      value: input ? call.function.arguments : '{}',
      enumerable: false,
    });
    blocks.push(block);
  }
  return blocks;
}

function stopReason(response: ChatResponse): string {
  const choice = response.choices[0];
  if (choice?.message.tool_calls && choice.message.tool_calls.length > 0) return 'tool_use';
  if (choice?.finishReason === 'length') return 'max_tokens';
  return 'end_turn';
}

function usage(response: ChatResponse, output: boolean) {
  return {
    input_tokens: response.usage?.promptTokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: output ? (response.usage?.completionTokens ?? 0) : 0,
    service_tier: 'standard',
  };
}

function respond(
  _parsed: ParsedMessagesRequest,
  response: ChatResponse,
  meta: ResponseMeta,
): Record<string, unknown> {
  return {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content: contentBlocks(response),
    stop_reason: stopReason(response),
    stop_sequence: null,
    usage: usage(response, true),
  };
}

function stream(_parsed: ParsedMessagesRequest, response: ChatResponse, meta: ResponseMeta): string {
  // `sseEvent(type, {type, ...data})` without building the merged object (same bytes: no data
  // field is named `type`); deltas serialise only what changes.
  const eventJson = (type: string, dataJson: string) =>
    `event: ${type}\ndata: {"type":${JSON.stringify(type)}${dataJson === '{}' ? '}' : `,${dataJson.slice(1)}`}\n\n`;
  const event = (type: string, data: Record<string, unknown>) => eventJson(type, JSON.stringify(data));
  const delta = (index: number, kind: string, field: string, piece: string) =>
    eventJson(
      'content_block_delta',
      `{"index":${index},"delta":{"type":${JSON.stringify(kind)},${JSON.stringify(field)}:${JSON.stringify(piece)}}}`,
    );
  let out = event('message_start', {
    message: {
      id: meta.id,
      type: 'message',
      role: 'assistant',
      model: meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(response, false),
    },
  });
  out += event('ping', {});
  contentBlocks(response).forEach((block, index) => {
    if (block.type === 'thinking') {
      out += event('content_block_start', {
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      });
      for (const piece of splitForStream(block.thinking as string, meta.chunkChars))
        out += delta(index, 'thinking_delta', 'thinking', piece);
      out += event('content_block_delta', {
        index,
        delta: { type: 'signature_delta', signature: block.signature },
      });
    } else if (block.type === 'text') {
      out += event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of splitForStream(block.text as string, meta.chunkChars))
        out += delta(index, 'text_delta', 'text', piece);
    } else {
      out += event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      const json = (block as Record<symbol, unknown>)[INPUT_JSON] as string;
      if (json.trim() !== '{}')
        for (const piece of splitForStream(json, meta.chunkChars))
          out += delta(index, 'input_json_delta', 'partial_json', piece);
    }
    out += event('content_block_stop', { index });
  });
  out += event('message_delta', {
    delta: { stop_reason: stopReason(response), stop_sequence: null },
    usage: { output_tokens: response.usage?.completionTokens ?? 0 },
  });
  return out + event('message_stop', {});
}

function streamError(_parsed: ParsedMessagesRequest, error: GatewayApiError): string {
  // What Anthropic sends when a stream fails after it started (e.g. overloaded_error).
  return sseEvent('error', {
    type: 'error',
    error: { type: anthropicErrorType(error.kind), message: error.message },
  });
}

export const messagesDialect: Dialect<ParsedMessagesRequest> = {
  api: 'messages',
  parse: (body) => parseMessagesRequest(body),
  respond,
  stream: (parsed, response, meta) => stream(parsed, response, meta),
  preamble: () => '',
  streamError: (parsed, error) => streamError(parsed, error),
  renderError: (error, requestId) => renderAnthropicError(error, requestId),
};
