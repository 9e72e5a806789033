// OpenAI Responses (`POST /v1/responses`), as the Codex CLI and the OpenAI Agents SDK speak it:
// input items (messages, `function_call` / `function_call_output`, `custom_tool_call` /
// `custom_tool_call_output`, reasoning items), function, custom and namespace tools, stateless
// input (Codex sends `store: false` and the whole history) or `previous_response_id`, and the
// real streaming event sequence with sequence numbers. Shapes follow the `openai` SDK's types.
//
// The server behind the gateway knows flat function tools only, so custom (freeform) tools
// become functions taking `{"input": string}`, and namespace tools become functions named
// `<namespace>__<name>`; answers are mapped back to the harness's own tool kinds and names.
import type { ChatMessage, ChatResponse, ToolCall, ToolChoice, ToolSchema, Usage } from '@shears/core';
import { type GatewayApiError, invalidRequest, renderOpenAIError } from './api-error.js';
import { parseRequest } from './api-schema.js';
import { textOfContent } from './content.js';
import {
  argumentsObject,
  contentText,
  type Dialect,
  inRange,
  type ParseContext,
  type ParsedRequest,
  type ResponseMeta,
  reasoningOf,
  unknownKeys,
} from './dialect.js';
import { randomId } from './ids.js';
import {
  type ResponsesInputItem,
  type ResponsesRequest,
  type ResponsesTool,
  responsesRequestSchema,
} from './openai-responses-api.js';
import { splitForStream, sseEvent } from './sse.js';

/** How a flat tool name the model calls maps back to the harness's tool. */
interface ToolTarget {
  kind: 'function' | 'custom';
  name: string;
  namespace?: string;
}

interface ParsedResponsesRequest extends ParsedRequest {
  /** Flat tool name → the harness's tool kind, name and namespace. */
  targets: Map<string, ToolTarget>;
  /** `include` asked for `reasoning.encrypted_content` (Codex does, with `store: false`). */
  includeEncryptedReasoning: boolean;
  store: boolean;
  /** The conversation without the instructions: kept under the response id for `previous_response_id`. */
  history: ChatMessage[];
  /** Request fields a Response object echoes. */
  echo: Record<string, unknown>;
}

const KNOWN: ReadonlySet<string> = new Set(Object.keys(responsesRequestSchema.shape));

/** Our own "encrypted" reasoning: the reasoning text, so a stateless harness gives it back intact. */
const ENCRYPTED_PREFIX = 'shears-reasoning-v1:';

function encodeReasoning(text: string): string {
  return ENCRYPTED_PREFIX + Buffer.from(text, 'utf8').toString('base64');
}

function decodeReasoning(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.startsWith(ENCRYPTED_PREFIX)) return undefined;
  return Buffer.from(value.slice(ENCRYPTED_PREFIX.length), 'base64').toString('utf8');
}

const flatName = (namespace: string, name: string) => `${namespace}__${name}`;

function customParameters(tool: Extract<ResponsesTool, { type: 'custom' }>): Record<string, unknown> {
  const format = tool.format;
  const grammar =
    format && format.type === 'grammar' && typeof format.definition === 'string'
      ? ` Format (${typeof format.syntax === 'string' ? format.syntax : 'grammar'}): ${format.definition}`
      : '';
  return {
    type: 'object',
    properties: { input: { type: 'string', description: `The tool's freeform input.${grammar}` } },
    required: ['input'],
    additionalProperties: false,
  };
}

type ServedTool = Extract<ResponsesTool, { type: 'function' | 'custom' }>;

function toTools(
  value: ResponsesRequest['tools'],
  ignored: string[],
): { tools: ToolSchema[] | undefined; targets: Map<string, ToolTarget> } {
  const targets = new Map<string, ToolTarget>();
  if (!value) return { tools: undefined, targets };
  const tools: ToolSchema[] = [];
  const add = (tool: ServedTool, param: string, namespace?: string) => {
    const kind = tool.type === 'custom' ? 'custom' : 'function';
    const name = namespace ? flatName(namespace, tool.name) : tool.name;
    if (targets.has(name))
      throw invalidRequest(
        `Duplicate tool name '${name}' at '${param}'.`,
        `${param}.name`,
        'duplicate_tool_name',
      );
    targets.set(name, { kind, name: tool.name, ...(namespace ? { namespace } : {}) });
    const schema: ToolSchema = { type: 'function', function: { name } };
    if (typeof tool.description === 'string') schema.function.description = tool.description;
    if (tool.type === 'custom') schema.function.parameters = customParameters(tool);
    else {
      if (tool.parameters) schema.function.parameters = tool.parameters;
      if (typeof tool.strict === 'boolean') schema.function.strict = tool.strict;
    }
    tools.push(schema);
  };
  value.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (tool.type === 'function' || tool.type === 'custom') add(tool as ServedTool, param);
    else if ('tools' in tool)
      tool.tools.forEach((inner, innerIndex) => {
        const innerParam = `${param}.tools[${innerIndex}]`;
        if (inner.type === 'function' || inner.type === 'custom')
          add(inner as ServedTool, innerParam, tool.name);
        else ignored.push(`${innerParam} (${inner.type})`);
      });
    else ignored.push(`${param} (${tool.type})`);
  });
  return { tools: tools.length > 0 ? tools : undefined, targets };
}

function toToolChoice(value: ResponsesRequest['tool_choice'], ignored: string[]): ToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if ('name' in value) {
    const name = value.namespace ? flatName(value.namespace, value.name) : value.name;
    return { type: 'function', function: { name } };
  }
  ignored.push(`tool_choice (${value.type})`);
  return undefined;
}

function reasoningText(item: Extract<ResponsesInputItem, { type: 'reasoning' }>): string {
  if (item.content) {
    const text = item.content.map((part) => (part.type === 'reasoning_text' ? part.text : '')).join('');
    if (text) return text;
  }
  const decoded = decodeReasoning(item.encrypted_content);
  if (decoded !== undefined) return decoded;
  if (item.summary)
    return item.summary
      .map((part) => part.text)
      .filter((text) => text)
      .join('\n\n');
  return '';
}

/** Responses input items → chat messages: consecutive assistant items form one assistant turn. */
function toMessages(input: ResponsesRequest['input']): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages: ChatMessage[] = [];
  let turn: ChatMessage | undefined;
  const flush = () => {
    if (turn) messages.push(turn);
    turn = undefined;
  };
  const assistant = () => {
    turn ??= { role: 'assistant', content: null };
    return turn;
  };
  const addCall = (call: ToolCall) => {
    const message = assistant();
    message.tool_calls = [...(message.tool_calls ?? []), call];
  };
  input.forEach((item, index) => {
    const param = `input[${index}]`;
    switch (item.type) {
      case undefined:
      case 'message': {
        if (item.role === 'assistant') {
          let message = assistant();
          if (message.tool_calls) {
            flush();
            message = assistant();
          }
          const content = textOfContent(item.content, `${param}.content`, 'openai');
          message.content = message.content ? `${message.content as string}\n${content}` : content;
          return;
        }
        flush();
        messages.push({
          role: item.role === 'developer' ? 'system' : item.role,
          content: textOfContent(item.content, `${param}.content`, 'openai'),
        });
        return;
      }
      case 'reasoning': {
        if (turn && (turn.content || turn.tool_calls)) flush();
        const reasoning = reasoningText(item);
        if (reasoning) {
          const message = assistant();
          message.reasoning_content = message.reasoning_content
            ? `${message.reasoning_content}\n\n${reasoning}`
            : reasoning;
        }
        return;
      }
      case 'function_call': {
        const name = item.namespace ? flatName(item.namespace, item.name) : item.name;
        const args =
          typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {});
        addCall({ id: item.call_id, type: 'function', function: { name, arguments: args } });
        return;
      }
      case 'custom_tool_call': {
        const name = item.namespace ? flatName(item.namespace, item.name) : item.name;
        addCall({
          id: item.call_id,
          type: 'function',
          function: { name, arguments: JSON.stringify({ input: item.input }) },
        });
        return;
      }
      default: {
        flush();
        messages.push({
          role: 'tool',
          tool_call_id: item.call_id,
          content: textOfContent(item.output, `${param}.output`, 'openai'),
        });
        return;
      }
    }
  });
  flush();
  return messages;
}

const outOfRange = (param: string, range: string) => (value: number) =>
  invalidRequest(`Invalid '${param}': ${value} is not in ${range}.`, param, 'invalid_value');

function parseResponsesRequest(rawBody: unknown, context: ParseContext): ParsedResponsesRequest {
  const body = parseRequest(responsesRequestSchema, rawBody, 'openai');
  const raw = rawBody as Record<string, unknown>;
  const ignoredFields = unknownKeys(raw, KNOWN);
  const instructions = body.instructions ?? undefined;
  const previousResponseId = body.previous_response_id ?? undefined;
  let history = toMessages(body.input);
  if (previousResponseId !== undefined) {
    const previous = context.recall(previousResponseId);
    if (!previous)
      throw invalidRequest(
        `Previous response with id '${previousResponseId}' not found.`,
        'previous_response_id',
        'previous_response_not_found',
      );
    history = [...previous, ...history];
  }
  if (history.length === 0)
    throw invalidRequest("Invalid 'input': the conversation is empty.", 'input', 'empty_array');
  const messages: ChatMessage[] = instructions
    ? [{ role: 'system', content: instructions }, ...history]
    : history;
  const stream = body.stream ?? false;
  const store = body.store ?? true;
  const temperature = inRange(body.temperature, { min: 0, max: 2 }, outOfRange('temperature', '[0, 2]'));
  const topP = inRange(body.top_p, { min: 0, max: 1 }, outOfRange('top_p', '[0, 1]'));
  const maxTokens = inRange(body.max_output_tokens, { min: 1 }, (value) =>
    invalidRequest(
      `Invalid 'max_output_tokens': expected an integer >= 1, but got ${value}.`,
      'max_output_tokens',
      'invalid_value',
    ),
  );
  const { tools, targets } = toTools(body.tools, ignoredFields);
  const toolChoice = toToolChoice(body.tool_choice, ignoredFields);
  const parallel = body.parallel_tool_calls ?? undefined;
  if (parallel === false) ignoredFields.push('parallel_tool_calls (false: not enforced on the model)');
  if (body.reasoning !== undefined) ignoredFields.push('reasoning');
  if (body.metadata !== undefined) ignoredFields.push('metadata');
  return {
    chat: {
      messages,
      ...(tools ? { tools } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(topP !== undefined ? { topP } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
    },
    stream,
    model: body.model,
    ignoredFields,
    targets,
    includeEncryptedReasoning: body.include?.includes('reasoning.encrypted_content') ?? false,
    store,
    history,
    echo: {
      instructions: instructions ?? null,
      max_output_tokens: maxTokens ?? null,
      parallel_tool_calls: parallel ?? true,
      previous_response_id: previousResponseId ?? null,
      reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      store,
      temperature: temperature ?? 1,
      text: { format: { type: 'text' } },
      tool_choice: raw.tool_choice ?? 'auto',
      tools: Array.isArray(raw.tools) ? raw.tools : [],
      top_p: topP ?? 1,
      truncation: 'disabled',
      metadata: body.metadata ?? {},
    },
  };
}

function usageBody(usage: Usage | undefined): Record<string, unknown> {
  return {
    input_tokens: usage?.promptTokens ?? 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage?.completionTokens ?? 0,
    output_tokens_details: { reasoning_tokens: usage?.reasoningTokens ?? 0 },
    total_tokens: usage?.totalTokens ?? 0,
  };
}

type OutputItem = Record<string, unknown> & { id: string; type: string };

/** The output items of one answer: reasoning, message, then the tool calls, in the model's order. */
function outputItems(parsed: ParsedResponsesRequest, message: ChatMessage): OutputItem[] {
  const items: OutputItem[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== undefined) {
    const item: OutputItem = {
      id: randomId('rs_'),
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: reasoning }],
    };
    if (parsed.includeEncryptedReasoning) item.encrypted_content = encodeReasoning(reasoning);
    items.push(item);
  }
  const text = contentText(message);
  if (text !== '')
    items.push({
      id: randomId('msg_'),
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
    });
  for (const call of message.tool_calls ?? []) {
    const target = parsed.targets.get(call.function.name);
    const namespace = target?.namespace ? { namespace: target.namespace } : {};
    if (target?.kind === 'custom') {
      const input = argumentsObject(call.function.arguments)?.input;
      items.push({
        id: randomId('ctc_'),
        type: 'custom_tool_call',
        status: 'completed',
        call_id: call.id,
        name: target.name,
        input: typeof input === 'string' ? input : call.function.arguments,
        ...namespace,
      });
    } else
      items.push({
        id: randomId('fc_'),
        type: 'function_call',
        status: 'completed',
        call_id: call.id,
        name: target?.name ?? call.function.name,
        arguments: call.function.arguments,
        ...namespace,
      });
  }
  return items;
}

interface ResponseState {
  status: string;
  output: OutputItem[];
  usage: Usage | undefined | null;
  incomplete?: boolean;
}

/** A Response object's fields before `output`. */
function responseHead(meta: ResponseMeta, state: Omit<ResponseState, 'output'>): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.created,
    status: state.status,
    ...(state.status === 'completed' || state.status === 'incomplete' ? { completed_at: meta.created } : {}),
    error: null,
    incomplete_details: state.incomplete ? { reason: 'max_output_tokens' } : null,
    model: meta.model,
  };
}

function responseObject(
  parsed: ParsedResponsesRequest,
  meta: ResponseMeta,
  state: ResponseState,
): Record<string, unknown> {
  // The fields of responseHead, written out: spreading it makes respond() several times slower.
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.created,
    status: state.status,
    ...(state.status === 'completed' || state.status === 'incomplete' ? { completed_at: meta.created } : {}),
    error: null,
    incomplete_details: state.incomplete ? { reason: 'max_output_tokens' } : null,
    model: meta.model,
    output: state.output,
    usage: state.usage === null ? null : usageBody(state.usage),
    ...parsed.echo,
  };
}

/** The echoed request fields as JSON members (no braces), serialised once per request. */
const echoMembers = new WeakMap<ParsedResponsesRequest, string>();

/**
 * `JSON.stringify(responseObject(parsed, meta, state))` with the output items given as JSON
 * text: a stream repeats the echoed request (instructions, tools) in three events and every
 * output item twice, and serialising them once each keeps a streamed answer cheap.
 */
function responseJson(
  parsed: ParsedResponsesRequest,
  meta: ResponseMeta,
  state: Omit<ResponseState, 'output'>,
  outputJson: string,
): string {
  let echo = echoMembers.get(parsed);
  if (echo === undefined) {
    echo = JSON.stringify(parsed.echo).slice(1, -1);
    echoMembers.set(parsed, echo);
  }
  const usage = JSON.stringify(state.usage === null ? null : usageBody(state.usage));
  return `${JSON.stringify(responseHead(meta, state)).slice(0, -1)},"output":${outputJson},"usage":${usage}${echo ? `,${echo}` : ''}}`;
}

function firstMessage(response: ChatResponse): ChatMessage {
  return response.choices[0]?.message ?? { role: 'assistant', content: '' };
}

const isIncomplete = (response: ChatResponse) =>
  response.choices[0]?.finishReason === 'length' && !(response.choices[0]?.message.tool_calls?.length ?? 0);

function respond(
  parsed: ParsedResponsesRequest,
  response: ChatResponse,
  meta: ResponseMeta,
): Record<string, unknown> {
  const incomplete = isIncomplete(response);
  return responseObject(parsed, meta, {
    status: incomplete ? 'incomplete' : 'completed',
    output: outputItems(parsed, firstMessage(response)),
    usage: response.usage,
    incomplete,
  });
}

/**
 * One event, `{type, sequence_number, ...fields}`, from the JSON text of `fields`: the same bytes
 * as stringifying the merged object (no field is named `type` or `sequence_number`), without
 * building it. A stream's events share large parts (the echoed request, the output items), and
 * serialising those once is most of what a streamed answer costs the gateway.
 */
function eventText(type: string, meta: ResponseMeta, fieldsJson: string): string {
  const head = `event: ${type}\ndata: {"type":${JSON.stringify(type)},"sequence_number":${meta.sequence++}`;
  return fieldsJson === '{}' ? `${head}}\n\n` : `${head},${fieldsJson.slice(1)}\n\n`;
}

function preamble(parsed: ParsedResponsesRequest, meta: ResponseMeta): string {
  const inProgress = `{"response":${responseJson(parsed, meta, { status: 'in_progress', usage: null }, '[]')}}`;
  return (
    eventText('response.created', meta, inProgress) + eventText('response.in_progress', meta, inProgress)
  );
}

function stream(
  parsed: ParsedResponsesRequest,
  response: ChatResponse,
  meta: ResponseMeta,
  preambleSent: boolean,
): string {
  let out = preambleSent ? '' : preamble(parsed, meta);
  const event = (type: string, fields: Record<string, unknown>) => {
    out += eventText(type, meta, JSON.stringify(fields));
  };
  const items = outputItems(parsed, firstMessage(response));
  const itemJsons: string[] = [];
  items.forEach((item, outputIndex) => {
    const where = { item_id: item.id, output_index: outputIndex };
    // `{...where, content_index?, delta, logprobs?}` for each delta, its constant part serialised once.
    const deltaEvent = (type: string, contentIndex: boolean, logprobs: boolean) => {
      const head = `{${JSON.stringify(where).slice(1, -1)}${contentIndex ? ',"content_index":0' : ''},"delta":`;
      const tail = logprobs ? ',"logprobs":[]}' : '}';
      return (delta: string) => {
        out += eventText(type, meta, `${head}${JSON.stringify(delta)}${tail}`);
      };
    };
    if (item.type === 'reasoning') {
      const text = (item.content as Array<{ text: string }>)[0]?.text ?? '';
      event('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, content: [], status: 'in_progress' },
      });
      event('response.content_part.added', {
        ...where,
        content_index: 0,
        part: { type: 'reasoning_text', text: '' },
      });
      const reasoningDelta = deltaEvent('response.reasoning_text.delta', true, false);
      for (const delta of splitForStream(text, meta.chunkChars)) reasoningDelta(delta);
      event('response.reasoning_text.done', { ...where, content_index: 0, text });
      event('response.content_part.done', {
        ...where,
        content_index: 0,
        part: { type: 'reasoning_text', text },
      });
    } else if (item.type === 'message') {
      const part = (item.content as Array<Record<string, unknown>>)[0] as { text: string };
      event('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, content: [], status: 'in_progress' },
      });
      event('response.content_part.added', {
        ...where,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
      const textDelta = deltaEvent('response.output_text.delta', true, true);
      for (const delta of splitForStream(part.text, meta.chunkChars)) textDelta(delta);
      event('response.output_text.done', { ...where, content_index: 0, text: part.text, logprobs: [] });
      event('response.content_part.done', { ...where, content_index: 0, part });
    } else if (item.type === 'function_call') {
      const args = item.arguments as string;
      event('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      const argumentsDelta = deltaEvent('response.function_call_arguments.delta', false, false);
      for (const delta of splitForStream(args, meta.chunkChars)) argumentsDelta(delta);
      event('response.function_call_arguments.done', { ...where, name: item.name, arguments: args });
    } else {
      const input = item.input as string;
      event('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, input: '', status: 'in_progress' },
      });
      const inputDelta = deltaEvent('response.custom_tool_call_input.delta', false, false);
      for (const delta of splitForStream(input, meta.chunkChars)) inputDelta(delta);
      event('response.custom_tool_call_input.done', { ...where, input });
    }
    const itemJson = JSON.stringify(item);
    itemJsons.push(itemJson);
    out += eventText('response.output_item.done', meta, `{"output_index":${outputIndex},"item":${itemJson}}`);
  });
  const incomplete = isIncomplete(response);
  const final = responseJson(
    parsed,
    meta,
    { status: incomplete ? 'incomplete' : 'completed', usage: response.usage, incomplete },
    `[${itemJsons.join(',')}]`,
  );
  out += eventText(incomplete ? 'response.incomplete' : 'response.completed', meta, `{"response":${final}}`);
  return out;
}

function streamError(
  parsed: ParsedResponsesRequest,
  error: GatewayApiError,
  meta: ResponseMeta,
  preambleSent: boolean,
): string {
  let out = preambleSent ? '' : preamble(parsed, meta);
  const failed = {
    ...responseObject(parsed, meta, { status: 'failed', output: [], usage: null }),
    error: {
      code: error.kind === 'rate_limit' ? 'rate_limit_exceeded' : 'server_error',
      message: error.message,
    },
  };
  out += sseEvent('response.failed', {
    type: 'response.failed',
    sequence_number: meta.sequence++,
    response: failed,
  });
  return out;
}

export const responsesDialect: Dialect<ParsedResponsesRequest> = {
  api: 'responses',
  parse: parseResponsesRequest,
  remember: (parsed, reply) => (parsed.store ? [...parsed.history, reply] : undefined),
  respond,
  stream,
  preamble,
  streamError,
  renderError: (error) => renderOpenAIError(error),
};
