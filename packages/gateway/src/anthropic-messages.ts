// Anthropic Messages (`POST /v1/messages`, `POST /v1/messages/count_tokens`), as Claude Code and
// the `@anthropic-ai/sdk` speak it: system blocks, system messages inside `messages` (Claude
// Code's mid-conversation system beta), `tool_use` / `tool_result` blocks, thinking blocks, and
// the streaming events `message_start`, `ping`, `content_block_start/delta/stop`,
// `message_delta`, `message_stop`. Shapes follow the official SDK's types.
import { createHash } from 'node:crypto';
import type { ChatMessage, ChatResponse, ToolCall, ToolChoice, ToolSchema } from '@shears/core';
import {
  type AnthropicBlock,
  countTokensRequestSchema,
  type MessagesRequest,
  messagesRequestSchema,
} from './anthropic-messages-api.js';
import {
  anthropicErrorType,
  type GatewayApiError,
  invalidRequest,
  renderAnthropicError,
} from './api-error.js';
import { parseRequest } from './api-schema.js';
import { textOfContent, unsupportedContent } from './content.js';
import {
  argumentsObject,
  contentText,
  type Dialect,
  inRange,
  type ParsedRequest,
  type ResponseMeta,
  reasoningOf,
  unknownKeys,
} from './dialect.js';
import { splitForStream, sseEvent } from './sse.js';

type ParsedMessagesRequest = ParsedRequest;

const KNOWN: ReadonlySet<string> = new Set(Object.keys(messagesRequestSchema.shape));

// Anthropic reports validation failures as "<field path>: <problem>".
const fieldError = (path: string, problem: string) => invalidRequest(`${path}: ${problem}`, path);

type Content = string | readonly AnthropicBlock[];

function textOf(block: AnthropicBlock, where: string): string {
  if (block.type === 'text' && 'text' in block) return block.text;
  throw unsupportedContent(block.type, where);
}

function toolResultText(
  content: string | readonly AnthropicBlock[] | null | undefined,
  path: string,
): string {
  if (content === undefined || content === null) return '';
  return textOfContent(content as Parameters<typeof textOfContent>[0], path, 'anthropic');
}

function systemText(value: MessagesRequest['system']): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  return value.map((block, index) => textOf(block, `system.${index}`)).join('\n');
}

function userMessages(content: Content, path: string): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: ChatMessage[] = [];
  let texts: string[] = [];
  const flush = () => {
    if (texts.length > 0) out.push({ role: 'user', content: texts.join('\n') });
    texts = [];
  };
  content.forEach((block, index) => {
    const where = `${path}.${index}`;
    if (block.type === 'tool_result' && 'tool_use_id' in block) {
      flush();
      const message: ChatMessage = {
        role: 'tool',
        tool_call_id: block.tool_use_id,
        content: toolResultText(block.content, `${where}.content`),
      };
      if (block.is_error === true) message.is_error = true;
      out.push(message);
    } else texts.push(textOf(block, where));
  });
  flush();
  return out;
}

function assistantMessage(content: Content, path: string): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const message: ChatMessage = { role: 'assistant', content: null };
  const texts: string[] = [];
  const thinking: string[] = [];
  const calls: ToolCall[] = [];
  content.forEach((block, index) => {
    const where = `${path}.${index}`;
    if (block.type === 'thinking' && 'thinking' in block) thinking.push(block.thinking);
    else if (block.type === 'redacted_thinking') return;
    else if (block.type === 'tool_use' && 'input' in block)
      calls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
      });
    else texts.push(textOf(block, where));
  });
  if (texts.length > 0) message.content = texts.join('');
  if (thinking.length > 0) message.reasoning_content = thinking.join('\n\n');
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

function toMessages(value: MessagesRequest['messages'], system: string | undefined): ChatMessage[] {
  const messages: ChatMessage[] = system !== undefined ? [{ role: 'system', content: system }] : [];
  value.forEach((raw, index) => {
    const path = `messages.${index}.content`;
    if (raw.role === 'user') messages.push(...userMessages(raw.content, path));
    else if (raw.role === 'assistant') messages.push(assistantMessage(raw.content, path));
    else
      messages.push({
        role: 'system',
        content:
          typeof raw.content === 'string'
            ? raw.content
            : raw.content.map((block, blockIndex) => textOf(block, `${path}.${blockIndex}`)).join('\n'),
      });
  });
  return messages;
}

function toTools(value: MessagesRequest['tools'], ignored: string[]): ToolSchema[] | undefined {
  if (!value) return undefined;
  const tools: ToolSchema[] = [];
  value.forEach((tool, index) => {
    if (!('input_schema' in tool)) {
      // Server tools (web search, code execution, …) run at Anthropic; nothing here can run them.
      ignored.push(`tools[${index}] (${tool.type})`);
      return;
    }
    // Key order as OpenAI writes tools (name, description, parameters): templates render them with tojson.
    const schema: ToolSchema = { type: 'function', function: { name: tool.name } };
    if (typeof tool.description === 'string') schema.function.description = tool.description;
    schema.function.parameters = tool.input_schema;
    tools.push(schema);
  });
  return tools.length > 0 ? tools : undefined;
}

function toToolChoice(value: MessagesRequest['tool_choice'], ignored: string[]): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value.disable_parallel_tool_use === true)
    ignored.push('tool_choice.disable_parallel_tool_use (not enforced on the model)');
  switch (value.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    default:
      return { type: 'function', function: { name: value.name } };
  }
}

const outOfRange = (field: string) => (value: number) =>
  fieldError(field, `Input should be less than or equal to 1 and at least 0 (got ${value})`);

function parse(rawBody: unknown, options: { countTokens: boolean }): ParsedMessagesRequest {
  const body = parseRequest(
    options.countTokens ? countTokensRequestSchema : messagesRequestSchema,
    rawBody,
    'anthropic',
  ) as MessagesRequest;
  const ignoredFields = unknownKeys(rawBody as Record<string, unknown>, KNOWN);
  const maxTokens = options.countTokens
    ? undefined
    : inRange(body.max_tokens, { min: 1 }, (value) =>
        fieldError('max_tokens', `Input should be greater than or equal to 1 (got ${value})`),
      );
  const messages = toMessages(body.messages, systemText(body.system));
  const temperature = inRange(body.temperature, { min: 0, max: 1 }, outOfRange('temperature'));
  const topP = inRange(body.top_p, { min: 0, max: 1 }, outOfRange('top_p'));
  const tools = toTools(body.tools, ignoredFields);
  const toolChoice = toToolChoice(body.tool_choice, ignoredFields);
  const stop =
    typeof body.stop_sequences === 'string' ? [body.stop_sequences] : (body.stop_sequences ?? undefined);
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
    stream: options.countTokens ? false : (body.stream ?? false),
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
