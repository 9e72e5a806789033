// OpenAI Chat Completions (`POST /v1/chat/completions`), as qwen-code, opencode and every
// OpenAI-compatible SDK speak it: messages, tools, tool_choice, parallel tool calls, reasoning
// (`reasoning_content`, read back from `reasoning_content` or `reasoning`), n = 1, and SSE
// streaming with `stream_options.include_usage`. Shapes follow the `openai` SDK's types.
import type { ChatMessage, ChatResponse, ToolCall, ToolChoice, ToolSchema, Usage } from '@shears/core';
import { type GatewayApiError, invalidRequest, openAIErrorType, renderOpenAIError } from './api-error.js';
import { parseRequest } from './api-schema.js';
import { textOfContent } from './content.js';
import {
  contentText,
  type Dialect,
  inRange,
  type ParsedRequest,
  type ResponseMeta,
  reasoningOf,
  unknownKeys,
} from './dialect.js';
import {
  type ChatCompletionMessage,
  type ChatCompletionRequest,
  chatCompletionRequestSchema,
  type OpenAIContent,
} from './openai-chat-api.js';
import { splitForStream, sseEvent } from './sse.js';

interface ParsedChatCompletion extends ParsedRequest {
  includeUsage: boolean;
}

const KNOWN: ReadonlySet<string> = new Set(Object.keys(chatCompletionRequestSchema.shape));

const text = (content: OpenAIContent, param: string) => textOfContent(content, param, 'openai');

function toToolCalls(
  calls: NonNullable<Extract<ChatCompletionMessage, { role: 'assistant' }>['tool_calls']>,
): ToolCall[] | undefined {
  if (calls.length === 0) return undefined;
  return calls.map((call) => {
    const args = call.function.arguments;
    return {
      id: call.id ?? '',
      type: 'function' as const,
      function: {
        name: call.function.name,
        arguments: typeof args === 'string' ? args : args ? JSON.stringify(args) : '',
      },
    };
  });
}

function toMessages(messages: ChatCompletionRequest['messages']): ChatMessage[] {
  return messages.map((raw, index): ChatMessage => {
    const param = `messages[${index}].content`;
    switch (raw.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: text(raw.content, param), ...(raw.name ? { name: raw.name } : {}) };
      case 'user':
        return { role: 'user', content: text(raw.content, param), ...(raw.name ? { name: raw.name } : {}) };
      case 'tool':
        return { role: 'tool', tool_call_id: raw.tool_call_id, content: text(raw.content, param) };
      default: {
        const message: ChatMessage = {
          role: 'assistant',
          content: raw.content === null || raw.content === undefined ? null : text(raw.content, param),
        };
        const toolCalls = raw.tool_calls ? toToolCalls(raw.tool_calls) : undefined;
        if (toolCalls) message.tool_calls = toolCalls;
        const reasoning = raw.reasoning_content ?? raw.reasoning;
        if (typeof reasoning === 'string' && reasoning) message.reasoning_content = reasoning;
        return message;
      }
    }
  });
}

function toTools(value: ChatCompletionRequest['tools'], ignored: string[]): ToolSchema[] | undefined {
  if (!value) return undefined;
  const tools: ToolSchema[] = [];
  value.forEach((tool, index) => {
    if (!('function' in tool)) {
      ignored.push(`tools[${index}] (${tool.type})`);
      return;
    }
    const fn = tool.function;
    const schema: ToolSchema = { type: 'function', function: { name: fn.name } };
    if (typeof fn.description === 'string') schema.function.description = fn.description;
    if (fn.parameters) schema.function.parameters = fn.parameters;
    if (typeof fn.strict === 'boolean') schema.function.strict = fn.strict;
    tools.push(schema);
  });
  return tools.length > 0 ? tools : undefined;
}

function toToolChoice(
  value: ChatCompletionRequest['tool_choice'],
  ignored: string[],
): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (value.type === 'allowed_tools') {
    ignored.push('tool_choice (allowed_tools)');
    return undefined;
  }
  return { type: 'function', function: { name: value.function.name } };
}

const outOfRange = (param: string, range: string) => (value: number) =>
  invalidRequest(`Invalid '${param}': ${value} is not in ${range}.`, param, 'invalid_value');
const belowMinimum = (param: string, minimum: number) => (value: number) =>
  invalidRequest(
    `Invalid '${param}': expected an integer >= ${minimum}, but got ${value}.`,
    param,
    'invalid_value',
  );

function parseChatCompletion(rawBody: unknown): ParsedChatCompletion {
  const body = parseRequest(chatCompletionRequestSchema, rawBody, 'openai');
  const ignoredFields = unknownKeys(rawBody as Record<string, unknown>, KNOWN);
  const n = inRange(body.n, { min: 1 }, belowMinimum('n', 1));
  if (n !== undefined && n > 1)
    throw invalidRequest(
      `Unsupported value: 'n' must be 1 here (got ${n}): the shears gateway records one completion per request. Send n separate requests instead.`,
      'n',
      'unsupported_value',
    );
  const stream = body.stream ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream)
      throw invalidRequest(
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'stream_options',
        'invalid_value',
      );
    includeUsage = body.stream_options.include_usage === true;
  }
  const temperature = inRange(body.temperature, { min: 0, max: 2 }, outOfRange('temperature', '[0, 2]'));
  const topP = inRange(body.top_p, { min: 0, max: 1 }, outOfRange('top_p', '[0, 1]'));
  const maxTokens =
    inRange(body.max_completion_tokens, { min: 1 }, belowMinimum('max_completion_tokens', 1)) ??
    inRange(body.max_tokens, { min: 1 }, belowMinimum('max_tokens', 1));
  const seed = body.seed ?? undefined;
  const messages = toMessages(body.messages);
  const tools = toTools(body.tools, ignoredFields);
  const toolChoice = toToolChoice(body.tool_choice, ignoredFields);
  const stop = typeof body.stop === 'string' ? [body.stop] : (body.stop ?? undefined);
  return {
    chat: {
      messages,
      ...(tools ? { tools } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(topP !== undefined ? { topP } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(stop ? { stop } : {}),
      ...(seed !== undefined ? { seed } : {}),
    },
    stream,
    includeUsage,
    model: body.model,
    ignoredFields,
  };
}

function usageBody(usage: Usage | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = {
    prompt_tokens: usage?.promptTokens ?? 0,
    completion_tokens: usage?.completionTokens ?? 0,
    total_tokens: usage?.totalTokens ?? 0,
  };
  if (usage?.reasoningTokens !== undefined)
    body.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  return body;
}

function finishReasonOf(response: ChatResponse): string {
  const choice = response.choices[0];
  if (choice?.message.tool_calls && choice.message.tool_calls.length > 0) return 'tool_calls';
  return choice?.finishReason ?? 'stop';
}

function firstMessage(response: ChatResponse): ChatMessage {
  return response.choices[0]?.message ?? { role: 'assistant', content: '' };
}

function respond(
  _parsed: ParsedChatCompletion,
  response: ChatResponse,
  meta: ResponseMeta,
): Record<string, unknown> {
  const source = firstMessage(response);
  const toolCalls = source.tool_calls ?? [];
  const text = contentText(source);
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: toolCalls.length > 0 && text === '' ? null : text,
    refusal: null,
  };
  if (toolCalls.length > 0)
    message.tool_calls = toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.function.name, arguments: call.function.arguments },
    }));
  const reasoning = reasoningOf(source);
  if (reasoning !== undefined) message.reasoning_content = reasoning;
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(response) }],
    usage: usageBody(response.usage),
  };
}

function stream(parsed: ParsedChatCompletion, response: ChatResponse, meta: ResponseMeta): string {
  const source = firstMessage(response);
  const base = { id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model };
  // Every chunk is `{...base, choices: [{index, delta, logprobs, finish_reason}], usage?}`: the
  // constant parts are serialised once, so a chunk costs one JSON.stringify of its delta (the same
  // bytes as stringifying the whole object; this writer was most of the gateway's streaming CPU).
  const head = `data: ${JSON.stringify(base).slice(0, -1)},"choices":[{"index":0,"delta":`;
  const tail = `}]${parsed.includeUsage ? ',"usage":null' : ''}}\n\n`;
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finishReason)}${tail}`;
  let out = chunk({ role: 'assistant', content: '' });
  const reasoning = reasoningOf(source);
  if (reasoning !== undefined)
    for (const piece of splitForStream(reasoning, meta.chunkChars))
      out += chunk({ reasoning_content: piece });
  for (const piece of splitForStream(contentText(source), meta.chunkChars)) out += chunk({ content: piece });
  (source.tool_calls ?? []).forEach((call, index) => {
    out += chunk({
      tool_calls: [
        { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
      ],
    });
    for (const piece of splitForStream(call.function.arguments, meta.chunkChars))
      out += chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
  });
  out += chunk({}, finishReasonOf(response));
  if (parsed.includeUsage)
    out += sseEvent(undefined, { ...base, choices: [], usage: usageBody(response.usage) });
  return `${out}data: [DONE]\n\n`;
}

function streamError(_parsed: ParsedChatCompletion, error: GatewayApiError): string {
  // What OpenAI sends when a stream fails after it started; the SDK raises it as an APIError.
  return sseEvent(undefined, {
    error: {
      message: error.message,
      type: openAIErrorType(error.kind),
      param: error.param,
      code: error.apiCode,
    },
  });
}

export const chatCompletionsDialect: Dialect<ParsedChatCompletion> = {
  api: 'chat.completions',
  parse: parseChatCompletion,
  respond,
  stream: (parsed, response, meta) => stream(parsed, response, meta),
  preamble: () => '',
  streamError: (parsed, error) => streamError(parsed, error),
  renderError: (error) => renderOpenAIError(error),
};
