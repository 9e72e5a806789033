// The agent loop (hermes-agent's HermesAgentLoop): one chat call per turn; tool calls (native,
// or parsed from raw text) run one at a time in the rollout's sandbox; their results go back
// as tool messages; the loop stops on a plain answer, the turn limit, a budget cap, a server
// error or an abort. Reading a reply is assistant-turn.ts; running its calls, tool-call-execution.ts;
// the strings the model sees, hermes-messages.ts.
import { randomUUID } from 'node:crypto';
import { parseAssistantTurn } from './assistant-turn.js';
import type { AgentResult, AgentStopReason } from './contracts/agent-result.js';
import type { BudgetV1 } from './contracts/budget.js';
import { createBudget } from './contracts/budget.js';
import type { ChatMessage } from './contracts/chat.js';
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
import type { ToolCallDecision, ToolCallRequest, ToolV1 } from './contracts/tool.js';
import { AbortedError, ServerError } from './errors.js';
import { linkSignals } from './linked-signal.js';
import type { ToolErrorRecord, TrajectoryStep } from './schemas/trajectory.js';
import { runTurnToolCalls, type ToolCallScope } from './tool-call-execution.js';
import { toolSchemas } from './tool-schemas.js';

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
  /** Given to tools as `ToolContext.onRolloutEnd`. */
  onRolloutEnd?: (cleanup: () => Promise<void> | void) => void;
  /** Milliseconds clock for timestamps (default Date.now). */
  now?: () => number;
}

class WallClockExceeded extends Error {}

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

export async function runAgent(options: RunAgentOptions): Promise<AgentResult> {
  const now = options.now ?? Date.now;
  const startedAt = performance.now();
  const budget = createBudget(options.budget ?? {});
  const logger = options.logger ?? silentLogger;
  const tools = options.tools ?? [];
  const toolByName = new Map(tools.map((tool) => [tool.name, tool]));
  const schemas = toolSchemas(tools);
  const rolloutId = options.rolloutId ?? randomUUID();
  const taskId = options.taskId ?? rolloutId;
  const state = options.state ?? new Map<string, unknown>();
  const messages: ChatMessage[] = options.messages.map((message) => ({ ...message }));
  const firstUser = messages.find((message) => message.role === 'user');
  const userTask = firstUser ? messageText(firstUser).trim().slice(0, 500) : undefined;

  // One signal for the whole rollout: the caller's abort and the wall-clock cap both end it.
  const rollout = linkSignals([options.signal], {
    timeoutMs: budget.wallClockMs,
    timeoutReason: () => new WallClockExceeded(`wall-clock limit of ${budget.wallClockMs} ms`),
  });
  const signal = rollout.signal;
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

  const scope: ToolCallScope = {
    toolByName,
    budget,
    signal,
    sandbox: options.sandbox,
    logger,
    rolloutId,
    toolContext: {
      sandbox: options.sandbox,
      taskId,
      rolloutId,
      logger,
      ...(userTask !== undefined ? { userTask } : {}),
      state,
      ...(options.onRolloutEnd ? { onRolloutEnd: options.onRolloutEnd } : {}),
    },
    beforeToolCall: options.beforeToolCall,
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
      const { content, reasoning, calls } = parseAssistantTurn(choice.message, {
        schemas,
        parser: options.parser,
        fallbackParser: options.fallbackParser,
        logger,
      });
      reasoningPerTurn.push(reasoning);
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
      const toolsStarted = performance.now();
      const results = await runTurnToolCalls(calls, turnNumber, scope);
      messages.push(...results.toolMessages, ...results.imageMessages);
      toolErrors.push(...results.toolErrors);
      policyRefusals += results.policyRefusals;
      const turnToolMs = performance.now() - toolsStarted;
      toolMs += turnToolMs;
      steps.push({
        stepId: turnNumber,
        thought: reasoning,
        content: content || '',
        toolCalls: results.stepCalls,
        timestamp,
        chatMs: chatElapsed,
        toolMs: turnToolMs,
      });
      if (results.aborted) {
        stopReason = stopReasonForAbort();
        if (stopReason === 'aborted') error = new AbortedError({ cause: signal.reason });
        break;
      }
    }
  } finally {
    rollout.dispose();
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
