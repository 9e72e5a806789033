// Tool-call execution for the agent loop: one call validated (unknown tool, bad JSON and bad
// arguments become hermes' error results, never crashes), checked by the action policy and run in
// the rollout's sandbox under its own signal (the rollout's plus the per-tool timeout); then one
// turn's calls in order, with the result budgets applied.
import { coerceToolArguments } from './coerce-tool-args.js';
import type { BudgetV1 } from './contracts/budget.js';
import type { ChatMessage, ImageUrlContentPart, ToolCall } from './contracts/chat.js';
import type { Logger } from './contracts/logger.js';
import type { SandboxV1 } from './contracts/sandbox.js';
import type { ToolCallDecision, ToolCallRequest, ToolContext, ToolOutput, ToolV1 } from './contracts/tool.js';
import {
  invalidArgumentsMessage,
  invalidJsonResult,
  toolErrorResult,
  toolFailedMessage,
  toolTimeoutMessage,
  unknownToolMessage,
} from './hermes-messages.js';
import { linkSignals } from './linked-signal.js';
import { pythonJsonDecodeError } from './python-json-error.js';
import type { ToolErrorRecord, TrajectoryToolCall } from './schemas/trajectory.js';
import { enforceTurnBudget, maybePersistToolResult } from './tool-result-budget.js';
import { toolParametersSchema } from './tool-schemas.js';

/** What every call of one rollout shares. */
export interface ToolCallScope {
  toolByName: ReadonlyMap<string, ToolV1>;
  budget: BudgetV1;
  /** The rollout's signal: its abort (caller or wall clock) ends the call. */
  signal: AbortSignal;
  sandbox: SandboxV1;
  logger: Logger;
  rolloutId: string;
  /** What every tool's context holds besides its signal. */
  toolContext: Omit<ToolContext, 'signal'>;
  beforeToolCall?: ((call: ToolCallRequest) => ToolCallDecision | Promise<ToolCallDecision>) | undefined;
}

interface CallOutcome {
  content: string;
  error: string | null;
  isToolError: boolean;
  refused: boolean;
  aborted: boolean;
  data?: unknown;
  images?: ImageUrlContentPart[];
}

const SLOW_TOOL_CALL_MS = 30_000;

function toolError(message: string, content = toolErrorResult(message)): CallOutcome {
  return { content, error: message, isToolError: true, refused: false, aborted: false };
}

const ABORTED: CallOutcome = {
  content: '',
  error: 'aborted',
  isToolError: false,
  refused: false,
  aborted: true,
};

/** The call's arguments as an object, or the error outcome the model sees instead. */
function parseArguments(
  argumentsText: string,
): { arguments: Record<string, unknown> } | { outcome: CallOutcome } {
  let raw: unknown;
  if (argumentsText.trim() === '') return { arguments: {} };
  try {
    raw = JSON.parse(argumentsText);
  } catch (cause) {
    // Python's wording (what hermes sends), falling back to V8's for the rare text Python accepts.
    const detail =
      pythonJsonDecodeError(argumentsText) ?? (cause instanceof Error ? cause.message : String(cause));
    return { outcome: toolError(`Invalid JSON: ${detail}`, invalidJsonResult(detail)) };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    const detail = `expected a JSON object, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`;
    return { outcome: toolError(`Invalid JSON: ${detail}`, invalidJsonResult(detail)) };
  }
  return { arguments: raw as Record<string, unknown> };
}

/** hermes' post-check: a JSON result with an error and a negative exit code is a tool error. */
function negativeExitError(content: string): string | null {
  if (!content.startsWith('{')) return null;
  try {
    const value = JSON.parse(content) as Record<string, unknown>;
    if (
      value &&
      typeof value === 'object' &&
      value.error &&
      value.exit_code &&
      typeof value.exit_code === 'number' &&
      value.exit_code < 0
    )
      return String(value.error);
  } catch {
    // Not JSON: an ordinary result.
  }
  return null;
}

/** Validates and runs one call; its failures are outcomes (only a throwing `beforeToolCall` propagates). */
async function executeToolCall(call: ToolCall, turn: number, scope: ToolCallScope): Promise<CallOutcome> {
  const name = call.function.name;
  const tool = scope.toolByName.get(name);
  if (!tool) return toolError(unknownToolMessage(name, [...scope.toolByName.keys()]));
  const parsedArguments = parseArguments(call.function.arguments);
  if ('outcome' in parsedArguments) return parsedArguments.outcome;
  const coerced = coerceToolArguments(parsedArguments.arguments, toolParametersSchema(tool));
  const parsed = tool.inputSchema.safeParse(coerced);
  if (!parsed.success) return toolError(invalidArgumentsMessage(name, parsed.error));
  const args = parsed.data as Record<string, unknown>;
  if (scope.beforeToolCall) {
    const decision = await scope.beforeToolCall({ id: call.id, name, arguments: args, turn, tool });
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
  const { signal } = scope;
  const timeoutMs = scope.budget.toolTimeoutMs;
  const linked = linkSignals([signal], {
    timeoutMs,
    timeoutReason: () => new Error(`timeout after ${timeoutMs} ms`),
  });
  const callSignal = linked.signal;
  const context: ToolContext = { ...scope.toolContext, signal: callSignal };
  let onAbort = () => {};
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    if (callSignal.aborted) onAbort();
    else callSignal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    // Race the tool against its signal so a tool that ignores the signal cannot hold the rollout.
    const execution = Promise.resolve().then(() => tool.execute(args, context));
    execution.catch(() => {});
    const output = await Promise.race([execution, aborted]);
    if (output === 'aborted' || callSignal.aborted) {
      if (linked.timedOut && !signal.aborted) return toolError(toolTimeoutMessage(name, timeoutMs!));
      return ABORTED;
    }
    const result: ToolOutput = typeof output === 'string' ? { content: output } : output;
    const content = typeof result.content === 'string' ? result.content : String(result.content);
    const isError = result.isError === true;
    const exitError = isError ? null : negativeExitError(content);
    return {
      content,
      error: isError ? content.slice(0, 500) : exitError,
      isToolError: isError || exitError !== null,
      refused: false,
      aborted: false,
      data: result.data,
      ...(Array.isArray(result.images) && result.images.length > 0 ? { images: result.images } : {}),
    };
  } catch (thrown) {
    if (signal.aborted) return ABORTED;
    return toolError(toolFailedMessage(thrown));
  } finally {
    callSignal.removeEventListener('abort', onAbort);
    linked.dispose();
  }
}

interface TurnToolResults {
  /** The tool messages, in call order (appended to the conversation by the caller). */
  toolMessages: Array<ChatMessage & { content: string; tool_call_id: string }>;
  /**
   * User messages carrying the images tools returned (one per call with images), appended after
   * the tool messages: chat formats allow images in user messages, not in tool messages.
   */
  imageMessages: ChatMessage[];
  stepCalls: TrajectoryToolCall[];
  toolErrors: ToolErrorRecord[];
  policyRefusals: number;
  /** The rollout stopped during the turn; the calls after the stop did not run. */
  aborted: boolean;
}

/**
 * Runs one turn's calls in order: each result goes through the per-tool result budget (an
 * oversized one is written into the sandbox with a preview), then the turn's total through the
 * per-turn budget.
 */
export async function runTurnToolCalls(
  calls: readonly ToolCall[],
  turn: number,
  scope: ToolCallScope,
): Promise<TurnToolResults> {
  const { signal, budget, sandbox } = scope;
  const results: TurnToolResults = {
    toolMessages: [],
    imageMessages: [],
    stepCalls: [],
    toolErrors: [],
    policyRefusals: 0,
    aborted: false,
  };
  for (const call of calls) {
    if (signal.aborted) {
      results.aborted = true;
      break;
    }
    const callStarted = performance.now();
    const outcome = await executeToolCall(call, turn, scope);
    if (outcome.aborted) {
      results.aborted = true;
      break;
    }
    if (outcome.refused) results.policyRefusals++;
    const callMs = performance.now() - callStarted;
    // hermes warns about calls over 30 s: they usually mean a stuck command or a saturated pool.
    if (callMs > SLOW_TOOL_CALL_MS)
      scope.logger.warn('slow tool call', {
        tool: call.function.name,
        rolloutId: scope.rolloutId,
        ms: Math.round(callMs),
      });
    const tool = scope.toolByName.get(call.function.name);
    const persisted = await maybePersistToolResult({
      content: outcome.content,
      toolName: call.function.name,
      toolCallId: call.id,
      sandbox,
      budget,
      ...(tool ? { tool } : {}),
      signal,
    });
    const resultText = persisted.content;
    if (outcome.isToolError)
      results.toolErrors.push({
        turn,
        toolName: call.function.name,
        arguments: call.function.arguments.slice(0, 200),
        error: outcome.error ?? '',
        toolResult: resultText.slice(0, 500),
      });
    results.toolMessages.push({ role: 'tool', tool_call_id: call.id, content: resultText });
    if (outcome.images)
      results.imageMessages.push({
        role: 'user',
        content: [
          {
            type: 'text',
            text: `${outcome.images.length === 1 ? 'The image' : `The ${outcome.images.length} images`} returned by the ${call.function.name} call ${call.id}:`,
          },
          ...outcome.images,
        ],
      });
    results.stepCalls.push({
      id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      result: resultText,
      error: outcome.error,
      latencyMs: performance.now() - callStarted,
      ...(persisted.persisted ? { persisted: true } : {}),
    });
  }
  if (!results.aborted && results.toolMessages.length > 0) {
    const changed = await enforceTurnBudget(results.toolMessages, { sandbox, budget, signal });
    if (changed.length > 0) {
      for (const stepCall of results.stepCalls) {
        const message = results.toolMessages.find((entry) => entry.tool_call_id === stepCall.id);
        if (message && changed.includes(stepCall.id)) {
          stepCall.result = message.content;
          stepCall.persisted = message.content.startsWith('<persisted-output>');
        }
      }
    }
  }
  return results;
}
