// OpenAI Chat Completions (`POST /v1/chat/completions`), as qwen-code, opencode and every
// OpenAI-compatible SDK speak it: messages, tools, tool_choice, parallel tool calls, reasoning
// (`reasoning_content`, read back from `reasoning_content` or `reasoning`), n = 1, and SSE
// streaming with `stream_options.include_usage`. Shapes follow the `openai` SDK's types.
import type { ChatMessage, ChatResponse, ToolChoice, ToolSchema, Usage } from '@shears/core';
import { type GatewayApiError, invalidRequest, openAIErrorType, renderOpenAIError } from './api-error.js';
import { contentToText, toolCallsFrom } from './content.js';
import {
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

interface ParsedChatCompletion extends ParsedRequest {
  includeUsage: boolean;
}

const KNOWN = new Set([
  'model',
  'messages',
  'tools',
  'tool_choice',
  'n',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'seed',
]);

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'];

function toMessages(value: unknown): ChatMessage[] {
  if (value === undefined)
    throw invalidRequest("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(value))
    throw invalidRequest(
      `Invalid type for 'messages': expected an array, but got ${describe(value)}.`,
      'messages',
      'invalid_type',
    );
  if (value.length === 0)
    throw invalidRequest(
      "Invalid 'messages': empty array. Expected an array with minimum length 1.",
      'messages',
      'empty_array',
    );
  return value.map((raw, index) => {
    const param = `messages[${index}]`;
    if (!isRecord(raw))
      throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
    const role = raw.role;
    if (typeof role !== 'string' || !ROLES.includes(role))
      throw invalidRequest(
        `Invalid value for '${param}.role': ${typeof role === 'string' ? `'${role}'` : describe(role)}. Supported values are: ${ROLES.map((r) => `'${r}'`).join(', ')}.`,
        `${param}.role`,
        'invalid_value',
      );
    const name = typeof raw.name === 'string' ? { name: raw.name } : {};
    switch (role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: contentToText(raw.content, `${param}.content`), ...name };
      case 'user':
        return { role: 'user', content: contentToText(raw.content, `${param}.content`), ...name };
      case 'tool': {
        if (typeof raw.tool_call_id !== 'string')
          throw invalidRequest(
            `Missing required parameter: '${param}.tool_call_id'.`,
            `${param}.tool_call_id`,
            'missing_required_parameter',
          );
        return {
          role: 'tool',
          tool_call_id: raw.tool_call_id,
          content: contentToText(raw.content, `${param}.content`),
        };
      }
      default: {
        const toolCalls = toolCallsFrom(raw.tool_calls, `${param}.tool_calls`);
        const message: ChatMessage = {
          role: 'assistant',
          content:
            raw.content === null || raw.content === undefined
              ? null
              : contentToText(raw.content, `${param}.content`),
        };
        if (toolCalls) message.tool_calls = toolCalls;
        const reasoning = typeof raw.reasoning_content === 'string' ? raw.reasoning_content : raw.reasoning;
        if (typeof reasoning === 'string' && reasoning) message.reasoning_content = reasoning;
        return message;
      }
    }
  });
}

function toTools(value: unknown, ignored: string[]): ToolSchema[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value))
    throw invalidRequest("Invalid type for 'tools': expected an array.", 'tools', 'invalid_type');
  const tools: ToolSchema[] = [];
  value.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (!isRecord(tool))
      throw invalidRequest(`Invalid type for '${param}': expected an object.`, param, 'invalid_type');
    if (tool.type !== 'function') {
      ignored.push(`${param} (${String(tool.type)})`);
      return;
    }
    const fn = tool.function;
    if (!isRecord(fn) || typeof fn.name !== 'string' || fn.name.length === 0)
      throw invalidRequest(
        `Missing required parameter: '${param}.function.name'.`,
        `${param}.function.name`,
        'missing_required_parameter',
      );
    const schema: ToolSchema = { type: 'function', function: { name: fn.name } };
    if (typeof fn.description === 'string') schema.function.description = fn.description;
    if (isRecord(fn.parameters)) schema.function.parameters = fn.parameters;
    if (typeof fn.strict === 'boolean') schema.function.strict = fn.strict;
    tools.push(schema);
  });
  return tools.length > 0 ? tools : undefined;
}

function toToolChoice(value: unknown, ignored: string[]): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 'auto' || value === 'none' || value === 'required') return value;
  if (
    isRecord(value) &&
    value.type === 'function' &&
    isRecord(value.function) &&
    typeof value.function.name === 'string'
  )
    return { type: 'function', function: { name: value.function.name } };
  if (isRecord(value) && value.type === 'allowed_tools') {
    ignored.push('tool_choice (allowed_tools)');
    return undefined;
  }
  throw invalidRequest(
    `Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or {"type": "function", "function": {"name": ...}}.`,
    'tool_choice',
    'invalid_value',
  );
}

function parseChatCompletion(rawBody: unknown): ParsedChatCompletion {
  const body = requireObjectBody(rawBody);
  const ignoredFields = unknownKeys(body, KNOWN);
  const model = typeof body.model === 'string' ? body.model : null;
  if (model === null)
    throw invalidRequest("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  const messages = toMessages(body.messages);
  const n = optionalInteger(body, 'n', 1);
  if (n !== undefined && n > 1)
    throw invalidRequest(
      `Unsupported value: 'n' must be 1 here (got ${n}): the shears gateway records one completion per request. Send n separate requests instead.`,
      'n',
      'unsupported_value',
    );
  const stream = optionalBoolean(body, 'stream') ?? false;
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream)
      throw invalidRequest(
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'stream_options',
        'invalid_value',
      );
    if (!isRecord(body.stream_options))
      throw invalidRequest(
        "Invalid type for 'stream_options': expected an object.",
        'stream_options',
        'invalid_type',
      );
    includeUsage = body.stream_options.include_usage === true;
  }
  const temperature = optionalNumber(body, 'temperature');
  if (temperature !== undefined && (temperature < 0 || temperature > 2))
    throw invalidRequest(
      `Invalid 'temperature': ${temperature} is not in [0, 2].`,
      'temperature',
      'invalid_value',
    );
  const topP = optionalNumber(body, 'top_p');
  if (topP !== undefined && (topP < 0 || topP > 1))
    throw invalidRequest(`Invalid 'top_p': ${topP} is not in [0, 1].`, 'top_p', 'invalid_value');
  const maxTokens =
    optionalInteger(body, 'max_completion_tokens', 1) ?? optionalInteger(body, 'max_tokens', 1);
  const seed = optionalInteger(body, 'seed', Number.MIN_SAFE_INTEGER);
  const tools = toTools(body.tools, ignoredFields);
  const toolChoice = toToolChoice(body.tool_choice, ignoredFields);
  const stop = stopList(body.stop, 'stop');
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
    model,
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
