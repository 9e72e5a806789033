// The agent loop (hermes-agent's HermesAgentLoop): one chat call per turn; tool calls (native,
// or parsed from raw text) run one at a time in the rollout's sandbox; their results go back
// as tool messages; the loop stops on a plain answer, the turn limit, a budget cap, a server
// error or an abort. Error results use hermes' exact strings, because models are trained on them.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { coerceToolArguments } from './coerce-tool-args.js';
import type { BudgetV1 } from './contracts/budget.js';
import { createBudget } from './contracts/budget.js';
import type { AssistantMessage, ChatMessage, ToolCall, ToolSchema } from './contracts/chat.js';
import { messageText } from './contracts/chat.js';
import type { Logger } from './contracts/logger.js';
import { silentLogger } from './contracts/logger.js';
import type { ToolCallParserV1 } from './contracts/parser.js';
import type { SandboxV1 } from './contracts/sandbox.js';
import type {
  ChatClient,
  ChatResponse,
  ServerSessionV1,
  ServerV1,
  TokenRecord,
  Usage,
} from './contracts/server.js';
import { isManagedServer } from './contracts/server.js';
import type { ToolContext, ToolOutput, ToolV1 } from './contracts/tool.js';
import { AbortedError, ServerError } from './errors.js';
import { pythonJsonDumps, pythonListRepr } from './python-format.js';
import { pythonJsonDecodeError } from './python-json-error.js';
import type { ToolErrorRecord, TrajectoryStep, TrajectoryToolCall } from './schemas/trajectory.js';
import { enforceTurnBudget, maybePersistToolResult } from './tool-result-budget.js';

/** Why the loop stopped. */
export type AgentStopReason =
  | 'answer'
  | 'max_turns'
  /** The server cut the last reply at its token limit (`finish_reason: "length"`). */
  | 'max_tokens'
  | 'token_budget'
  | 'cost_budget'
  | 'wall_clock'
  | 'server_error'
  | 'aborted';

export interface ToolCallRequest {
  id: string;
  name: string;
  /** Validated arguments. */
  arguments: Record<string, unknown>;
  /** 1-based turn number. */
  turn: number;
  tool: ToolV1;
}

export type ToolCallDecision = { allow: true } | { allow: false; message: string };

export interface RunAgentOptions {
  /** A server, a managed server (a session is opened per rollout) or any chat client. */
  server: ServerV1 | ChatClient;
  /** The prompt: system and user messages. Not mutated. */
  messages: ChatMessage[];
  tools?: ToolV1[];
  /** The rollout's own sandbox, passed to every tool. */
  sandbox: SandboxV1;
  taskId?: string;
  rolloutId?: string;
  budget?: Partial<BudgetV1>;
  /** Parse tool calls from raw completion text whenever the server returned none. */
  parser?: ToolCallParserV1;
  /**
   * hermes' fallback: with no native calls and `<tool_call>` in the content, parse with this
   * parser (hermes uses its `hermes` parser). Ignored when `parser` is set.
   */
  fallbackParser?: ToolCallParserV1;
  temperature?: number;
  maxTokens?: number;
  extraBody?: Record<string, unknown>;
  /** The action policy: refusals become the tool's result and are counted. */
  beforeToolCall?: (call: ToolCallRequest) => ToolCallDecision | Promise<ToolCallDecision>;
  signal?: AbortSignal;
  logger?: Logger;
  /** Per-rollout state shared between tools. */
  state?: Map<string, unknown>;
  /** Milliseconds clock for timestamps (default Date.now). */
  now?: () => number;
}

export interface AgentTimings {
  totalMs: number;
  chatMs: number;
  toolMs: number;
}

export interface AgentResult {
  /** The whole conversation: prompt, assistant turns, tool results. */
  messages: ChatMessage[];
  turnsUsed: number;
  finishedNaturally: boolean;
  /** The final answer text when the model finished naturally. */
  finalResponse: string | null;
  reasoningPerTurn: Array<string | null>;
  toolErrors: ToolErrorRecord[];
  steps: TrajectoryStep[];
  usage: Usage;
  timings: AgentTimings;
  stopReason: AgentStopReason;
  /** The error that ended the loop (a ServerError, kept so the runner can classify it). */
  error?: unknown;
  /** Exact tokens, when the server is managed. */
  tokenRecord?: TokenRecord;
  policyRefusals: number;
}

const SLOW_TOOL_CALL_MS = 30_000;

const schemaCache = new WeakMap<ToolV1, Record<string, unknown>>();

/** The JSON schema a tool shows the model: `tool.jsonSchema`, else derived from its zod schema. */
export function toolParametersSchema(tool: ToolV1): Record<string, unknown> {
  if (tool.jsonSchema) return tool.jsonSchema;
  let cached = schemaCache.get(tool);
  if (!cached) {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(tool.inputSchema, {
      io: 'input',
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    cached = rest;
    schemaCache.set(tool, cached);
  }
  return cached;
}

/** OpenAI function-tool definitions for these tools. */
export function toolSchemas(tools: readonly ToolV1[]): ToolSchema[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: toolParametersSchema(tool) },
  }));
}

/** Reasoning of an assistant message: reasoning_content → reasoning → reasoning_details[].text. */
export function extractReasoning(message: AssistantMessage | ChatMessage): string | null {
  if (typeof message.reasoning_content === 'string' && message.reasoning_content)
    return message.reasoning_content;
  const reasoning = (message as AssistantMessage).reasoning;
  if (typeof reasoning === 'string' && reasoning) return reasoning;
  const details = (message as AssistantMessage).reasoning_details;
  if (Array.isArray(details)) {
    for (const detail of details)
      if (detail && typeof detail.text === 'string' && detail.text) return detail.text;
  }
  return null;
}

/** hermes' result for a failed call: `{"error": "..."}` as Python's json.dumps writes it. */
export function toolErrorResult(message: string): string {
  return pythonJsonDumps({ error: message });
}

/** The message for an unknown tool, listing the available names as a Python list. */
export function unknownToolMessage(name: string, available: readonly string[]): string {
  return `Unknown tool '${name}'. Available tools: ${pythonListRepr([...available].sort())}`;
}

function describeThrown(error: unknown): string {
  if (error instanceof Error) return `${error.name || error.constructor.name}: ${error.message}`;
  return `Error: ${String(error)}`;
}

function shortId(): string {
  return randomUUID().replaceAll('-', '').slice(0, 8);
}

function zeroUsage(): Usage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
}

function addUsage(total: Usage, usage: Usage | undefined): void {
  if (!usage) return;
  total.promptTokens += usage.promptTokens;
  total.completionTokens += usage.completionTokens;
  total.totalTokens += usage.totalTokens;
  if (usage.reasoningTokens !== undefined)
    total.reasoningTokens = (total.reasoningTokens ?? 0) + usage.reasoningTokens;
  if (usage.costUsd !== undefined) total.costUsd = (total.costUsd ?? 0) + usage.costUsd;
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
    .join('; ');
}

/** Resolves when the signal aborts; never rejects. */
function whenAborted(signal: AbortSignal): { promise: Promise<void>; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    cancel = () => signal.removeEventListener('abort', onAbort);
  });
  return { promise, cancel };
}

class WallClockExceeded extends Error {}

interface CallOutcome {
  content: string;
  error: string | null;
  isToolError: boolean;
  refused: boolean;
  aborted: boolean;
  data?: unknown;
}

export async function runAgent(options: RunAgentOptions): Promise<AgentResult> {
  const now = options.now ?? Date.now;
  const startedAt = performance.now();
  const budget = createBudget(options.budget ?? {});
  const logger = options.logger ?? silentLogger;
  const tools = options.tools ?? [];
  const toolByName = new Map(tools.map((tool) => [tool.name, tool]));
  const toolNames = [...toolByName.keys()];
  const schemas = toolSchemas(tools);
  const rolloutId = options.rolloutId ?? randomUUID();
  const taskId = options.taskId ?? rolloutId;
  const state = options.state ?? new Map<string, unknown>();
  const messages: ChatMessage[] = options.messages.map((message) => ({ ...message }));
  const firstUser = messages.find((message) => message.role === 'user');
  const userTask = firstUser ? messageText(firstUser).trim().slice(0, 500) : undefined;

  // One controller for the whole rollout: the caller's abort and the wall-clock cap both end it.
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) controller.abort(options.signal.reason);
  else options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const wallTimer =
    budget.wallClockMs !== undefined
      ? setTimeout(
          () => controller.abort(new WallClockExceeded(`wall-clock limit of ${budget.wallClockMs} ms`)),
          budget.wallClockMs,
        )
      : undefined;
  const signal = controller.signal;
  const stopReasonForAbort = (): AgentStopReason =>
    signal.reason instanceof WallClockExceeded ? 'wall_clock' : 'aborted';

  let session: ServerSessionV1 | undefined;
  let client: ChatClient = options.server;
  if ('specificationVersion' in options.server && isManagedServer(options.server)) {
    session = options.server.openSession({ rolloutId });
    client = session;
  }

  const usage = zeroUsage();
  const reasoningPerTurn: Array<string | null> = [];
  const toolErrors: ToolErrorRecord[] = [];
  const steps: TrajectoryStep[] = [];
  let chatMs = 0;
  let toolMs = 0;
  let turnsUsed = 0;
  let finishedNaturally = false;
  let finalResponse: string | null = null;
  let stopReason: AgentStopReason = 'max_turns';
  let error: unknown;
  let policyRefusals = 0;

  const recordToolError = (turn: number, name: string, args: string, message: string, result: string) => {
    toolErrors.push({
      turn,
      toolName: name,
      arguments: args.slice(0, 200),
      error: message,
      toolResult: result.slice(0, 500),
    });
  };

  const runCall = async (call: ToolCall, turn: number): Promise<CallOutcome> => {
    const name = call.function.name;
    const tool = toolByName.get(name);
    if (!tool) {
      const message = unknownToolMessage(name, toolNames);
      return {
        content: toolErrorResult(message),
        error: message,
        isToolError: true,
        refused: false,
        aborted: false,
      };
    }
    const argumentsText = call.function.arguments;
    let raw: unknown;
    if (argumentsText.trim() === '') raw = {};
    else {
      try {
        raw = JSON.parse(argumentsText);
      } catch (cause) {
        // Python's wording (what hermes sends), falling back to V8's for the rare text Python accepts.
        const detail =
          pythonJsonDecodeError(argumentsText) ?? (cause instanceof Error ? cause.message : String(cause));
        return {
          content: toolErrorResult(
            `Invalid JSON in tool arguments: ${detail}. Please retry with valid JSON.`,
          ),
          error: `Invalid JSON: ${detail}`,
          isToolError: true,
          refused: false,
          aborted: false,
        };
      }
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      const detail = `expected a JSON object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`;
      return {
        content: toolErrorResult(`Invalid JSON in tool arguments: ${detail}. Please retry with valid JSON.`),
        error: `Invalid JSON: ${detail}`,
        isToolError: true,
        refused: false,
        aborted: false,
      };
    }
    const coerced = coerceToolArguments(raw as Record<string, unknown>, toolParametersSchema(tool));
    const parsed = tool.inputSchema.safeParse(coerced);
    if (!parsed.success) {
      const message = `Invalid arguments for tool '${name}': ${formatIssues(parsed.error)}. Please retry with valid arguments.`;
      return {
        content: toolErrorResult(message),
        error: message,
        isToolError: true,
        refused: false,
        aborted: false,
      };
    }
    const args = parsed.data as Record<string, unknown>;
    if (options.beforeToolCall) {
      const decision = await options.beforeToolCall({ id: call.id, name, arguments: args, turn, tool });
      if (!decision.allow) {
        return {
          content: toolErrorResult(decision.message),
          error: null,
          isToolError: false,
          refused: true,
          aborted: false,
        };
      }
    }
    // Each call gets its own signal: the rollout's, plus the per-call timeout.
    const callController = new AbortController();
    const onRolloutAbort = () => callController.abort(signal.reason);
    signal.addEventListener('abort', onRolloutAbort, { once: true });
    const timeoutMs = budget.toolTimeoutMs;
    let timedOut = false;
    const timer =
      timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            callController.abort(new Error(`timeout after ${timeoutMs} ms`));
          }, timeoutMs)
        : undefined;
    const context: ToolContext = {
      sandbox: options.sandbox,
      taskId,
      rolloutId,
      signal: callController.signal,
      logger,
      ...(userTask !== undefined ? { userTask } : {}),
      state,
    };
    const aborted = whenAborted(callController.signal);
    try {
      // Race the tool against its signal so a tool that ignores the signal cannot hold the rollout.
      const execution = Promise.resolve().then(() => tool.execute(args, context));
      execution.catch(() => {});
      const output = await Promise.race([execution, aborted.promise.then(() => 'aborted' as const)]);
      if (output === 'aborted' || callController.signal.aborted) {
        if (timedOut && !signal.aborted) {
          const message = `Tool execution failed: TimeoutError: Tool '${name}' timed out after ${timeoutMs} ms`;
          return {
            content: toolErrorResult(message),
            error: message,
            isToolError: true,
            refused: false,
            aborted: false,
          };
        }
        return { content: '', error: 'aborted', isToolError: false, refused: false, aborted: true };
      }
      const result: ToolOutput = typeof output === 'string' ? { content: output } : output;
      const content = typeof result.content === 'string' ? result.content : String(result.content);
      let isToolError = result.isError === true;
      let errorText: string | null = isToolError ? content.slice(0, 500) : null;
      // hermes' post-check: a JSON result with an error and a negative exit code is a tool error.
      if (!isToolError && content.startsWith('{')) {
        try {
          const value = JSON.parse(content) as Record<string, unknown>;
          if (
            value &&
            typeof value === 'object' &&
            value.error &&
            value.exit_code &&
            typeof value.exit_code === 'number' &&
            value.exit_code < 0
          ) {
            isToolError = true;
            errorText = String(value.error);
          }
        } catch {
          // Not JSON: an ordinary result.
        }
      }
      return { content, error: errorText, isToolError, refused: false, aborted: false, data: result.data };
    } catch (thrown) {
      if (signal.aborted)
        return { content: '', error: 'aborted', isToolError: false, refused: false, aborted: true };
      const message = `Tool execution failed: ${describeThrown(thrown)}`;
      return {
        content: toolErrorResult(message),
        error: message,
        isToolError: true,
        refused: false,
        aborted: false,
      };
    } finally {
      aborted.cancel();
      if (timer) clearTimeout(timer);
      signal.removeEventListener('abort', onRolloutAbort);
    }
  };

  try {
    for (let turn = 0; turn < budget.maxTurns; turn++) {
      if (signal.aborted) {
        stopReason = stopReasonForAbort();
        break;
      }
      if (budget.maxTokens !== undefined && usage.totalTokens >= budget.maxTokens) {
        stopReason = 'token_budget';
        break;
      }
      if (budget.maxCostUsd !== undefined && (usage.costUsd ?? 0) >= budget.maxCostUsd) {
        stopReason = 'cost_budget';
        break;
      }
      const turnNumber = turn + 1;
      turnsUsed = turnNumber;
      const chatStarted = performance.now();
      let response: ChatResponse;
      try {
        response = await client.chat({
          messages,
          ...(schemas.length > 0 ? { tools: schemas } : {}),
          n: 1,
          ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
          ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
          ...(options.extraBody && Object.keys(options.extraBody).length > 0
            ? { extraBody: options.extraBody }
            : {}),
          signal,
        });
      } catch (thrown) {
        chatMs += performance.now() - chatStarted;
        if (signal.aborted) {
          stopReason = stopReasonForAbort();
          if (stopReason === 'aborted')
            error = AbortedError.isInstance(thrown) ? thrown : new AbortedError({ cause: signal.reason });
        } else {
          stopReason = 'server_error';
          error = thrown;
        }
        break;
      }
      const chatElapsed = performance.now() - chatStarted;
      chatMs += chatElapsed;
      addUsage(usage, response.usage);
      const choice = response.choices[0];
      if (!choice) {
        stopReason = 'server_error';
        error = new ServerError({ message: 'The server returned no choices', retryable: true });
        break;
      }
      const assistant = choice.message;
      const reasoning = extractReasoning(assistant);
      reasoningPerTurn.push(reasoning);
      let content = messageText(assistant);
      let calls: ToolCall[] = (assistant.tool_calls ?? []).map((call) => ({
        id: call.id || `call_${shortId()}`,
        type: 'function',
        function: { name: call.function.name, arguments: call.function.arguments ?? '' },
      }));
      if (calls.length === 0 && content && schemas.length > 0) {
        const parser =
          options.parser ?? (content.includes('<tool_call>') ? options.fallbackParser : undefined);
        if (parser) {
          try {
            const parsed = parser.parse(content, { tools: schemas });
            if (parsed.toolCalls.length > 0) {
              calls = parsed.toolCalls.map((call) => ({
                id: call.id || `call_${shortId()}`,
                type: 'function',
                function: { name: call.name, arguments: call.arguments },
              }));
              content = parsed.content ?? '';
            }
          } catch (thrown) {
            logger.warn('tool-call parser threw; treating the turn as plain text', {
              parser: parser.id,
              error: describeThrown(thrown),
            });
          }
        }
      }
      const timestamp = now();
      if (calls.length === 0) {
        messages.push({
          role: 'assistant',
          content: content || '',
          ...(reasoning ? { reasoning_content: reasoning } : {}),
        });
        steps.push({
          stepId: turnNumber,
          thought: reasoning,
          content: content || '',
          toolCalls: [],
          timestamp,
          chatMs: chatElapsed,
          toolMs: 0,
        });
        // A reply cut at the token limit (`max_tokens`, or the context) is not an answer: the
        // model did not stop, the server stopped it. Recording it as finished would reward a
        // truncated text as if the model had chosen to end there.
        if (choice.finishReason === 'length') {
          stopReason = 'max_tokens';
          break;
        }
        finishedNaturally = true;
        finalResponse = content || '';
        stopReason = 'answer';
        break;
      }
      messages.push({
        role: 'assistant',
        content: content || '',
        tool_calls: calls,
        ...(reasoning ? { reasoning_content: reasoning } : {}),
      });
      const stepCalls: TrajectoryToolCall[] = [];
      const toolMessages: Array<ChatMessage & { content: string; tool_call_id: string }> = [];
      const toolsStarted = performance.now();
      let abortedMidTool = false;
      for (const call of calls) {
        if (signal.aborted) {
          abortedMidTool = true;
          break;
        }
        const callStarted = performance.now();
        const outcome = await runCall(call, turnNumber);
        if (outcome.aborted) {
          abortedMidTool = true;
          break;
        }
        if (outcome.refused) policyRefusals++;
        const callMs = performance.now() - callStarted;
        // hermes warns about calls over 30 s: they usually mean a stuck command or a saturated pool.
        if (callMs > SLOW_TOOL_CALL_MS)
          logger.warn('slow tool call', { tool: call.function.name, rolloutId, ms: Math.round(callMs) });
        let resultText = outcome.content;
        let persisted = false;
        const tool = toolByName.get(call.function.name);
        const layer2 = await maybePersistToolResult({
          content: resultText,
          toolName: call.function.name,
          toolCallId: call.id,
          sandbox: options.sandbox,
          budget,
          ...(tool ? { tool } : {}),
          signal,
        });
        resultText = layer2.content;
        persisted = layer2.persisted;
        if (outcome.isToolError)
          recordToolError(
            turnNumber,
            call.function.name,
            call.function.arguments,
            outcome.error ?? '',
            resultText,
          );
        const toolMessage = { role: 'tool', tool_call_id: call.id, content: resultText };
        messages.push(toolMessage);
        toolMessages.push(toolMessage);
        stepCalls.push({
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          result: resultText,
          error: outcome.error,
          latencyMs: performance.now() - callStarted,
          ...(persisted ? { persisted: true } : {}),
        });
      }
      if (!abortedMidTool && toolMessages.length > 0) {
        const changed = await enforceTurnBudget(toolMessages, { sandbox: options.sandbox, budget, signal });
        if (changed.length > 0) {
          for (const stepCall of stepCalls) {
            const message = toolMessages.find((entry) => entry.tool_call_id === stepCall.id);
            if (message && changed.includes(stepCall.id)) {
              stepCall.result = message.content;
              stepCall.persisted = message.content.startsWith('<persisted-output>');
            }
          }
        }
      }
      const turnToolMs = performance.now() - toolsStarted;
      toolMs += turnToolMs;
      steps.push({
        stepId: turnNumber,
        thought: reasoning,
        content: content || '',
        toolCalls: stepCalls,
        timestamp,
        chatMs: chatElapsed,
        toolMs: turnToolMs,
      });
      if (abortedMidTool) {
        stopReason = stopReasonForAbort();
        if (stopReason === 'aborted') error = new AbortedError({ cause: signal.reason });
        break;
      }
    }
  } finally {
    if (wallTimer) clearTimeout(wallTimer);
    options.signal?.removeEventListener('abort', onOuterAbort);
  }

  let tokenRecord: TokenRecord | undefined;
  if (session) {
    try {
      tokenRecord = session.tokenRecord();
    } finally {
      session.close();
    }
  }

  return {
    messages,
    turnsUsed,
    finishedNaturally,
    finalResponse,
    reasoningPerTurn,
    toolErrors,
    steps,
    usage,
    timings: { totalMs: performance.now() - startedAt, chatMs, toolMs },
    stopReason,
    ...(error !== undefined ? { error } : {}),
    ...(tokenRecord ? { tokenRecord } : {}),
    policyRefusals,
  };
}
