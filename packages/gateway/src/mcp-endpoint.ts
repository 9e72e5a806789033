// The gateway's MCP endpoint: a rollout's own tools (terminal, file tools, the env's own) served
// to the agent program over MCP (streamable HTTP, the official @modelcontextprotocol/sdk, no
// protocol code here), at `<session prefix>/mcp` with the session's key. A call runs through the
// kernel's own tool path (`runTurnToolCalls`: argument checks, hermes' error texts, the action
// policy, the per-tool timeout, the result budgets) in THAT rollout's sandbox, and is recorded in
// the session's record. Stateful: an `initialize` opens one SDK server and transport (an MCP
// session, its id in `mcp-session-id`) that serves the client's later requests, until the client
// deletes it or the rollout ends; the ids live in this rollout's endpoint only, so one rollout's
// MCP session id means nothing at another's (404), and the gateway checks the key first (401).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type BudgetV1,
  type ChatMessage,
  InvalidArgumentError,
  type Logger,
  type SandboxV1,
  silentLogger,
  type ToolCallDecision,
  type ToolCallRequest,
  type ToolV1,
} from '@shears/core';
import { createBudget, linkSignals, runTurnToolCalls, sendJson, toolSchemas } from '@shears/core/internal';
import { randomId } from './ids.js';

/** What a session serves over MCP: the rollout's tools, run in the rollout's sandbox. */
export interface GatewaySessionTools {
  tools: readonly ToolV1[];
  sandbox: SandboxV1;
  /** The task id tools see (default: the rollout id). */
  taskId?: string;
  /** The rollout's budget: result thresholds, preview size, per-tool timeout (defaults: the kernel's). */
  budget?: Partial<BudgetV1>;
  /** The first user message, as tools see it (`userTask`). */
  userTask?: string;
  /** The action policy, as for the agent loop: a refused call returns its message as the result. */
  beforeToolCall?: (call: ToolCallRequest) => ToolCallDecision | Promise<ToolCallDecision>;
  /** Per-rollout state shared between tools (default: a fresh map per session). */
  state?: Map<string, unknown>;
  logger?: Logger;
}

/** One tool call made over the session's MCP endpoint. */
export interface GatewayToolCallRecord {
  /** Order of the call within the session, from 0. */
  index: number;
  name: string;
  /** The arguments as the client sent them (JSON). */
  arguments: string;
  /** What the client got back (after the result budget: a persisted result's preview). */
  result: string;
  /** The tool's error (bad arguments, unknown tool, a failure, a timeout), or null. */
  error: string | null;
  /** The call was refused by the action policy. */
  refused: boolean;
  /** The result was written into the sandbox (over its threshold); `result` is the preview. */
  persisted: boolean;
  /** Epoch milliseconds at arrival. */
  startedAt: number;
  durationMs: number;
}

/** The SDK, loaded on the first MCP request (a gateway without MCP never loads it). */
type Sdk = {
  Server: typeof import('@modelcontextprotocol/sdk/server/index.js').Server;
  StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  ListToolsRequestSchema: typeof import('@modelcontextprotocol/sdk/types.js').ListToolsRequestSchema;
  CallToolRequestSchema: typeof import('@modelcontextprotocol/sdk/types.js').CallToolRequestSchema;
};
let sdk: Promise<Sdk> | undefined;
/** MCP sessions one rollout may hold at once (a CLI normally opens one). */
const MAX_SESSIONS = 16;
const loadSdk = (): Promise<Sdk> =>
  (sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([server, transport, types]) => ({
    Server: server.Server,
    StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport,
    ListToolsRequestSchema: types.ListToolsRequestSchema,
    CallToolRequestSchema: types.CallToolRequestSchema,
  })));

/** One session's MCP endpoint. */
export interface McpEndpoint {
  /** Serves one HTTP request (POST/GET/DELETE `<prefix>/mcp`), already authenticated. */
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  /** The calls made so far. */
  calls(): GatewayToolCallRecord[];
  /** Ends the endpoint: calls in flight are aborted and awaited. */
  close(): Promise<void>;
}

export function createMcpEndpoint(options: {
  rolloutId: string;
  tools: GatewaySessionTools;
  now: () => number;
}): McpEndpoint {
  const { rolloutId, now } = options;
  const settings = options.tools;
  const toolByName = new Map(settings.tools.map((tool) => [tool.name, tool]));
  if (toolByName.size !== settings.tools.length) {
    const names = settings.tools.map((tool) => tool.name);
    const twice = names.filter((name, index) => names.indexOf(name) !== index);
    throw new InvalidArgumentError({
      argument: 'tools',
      value: [...new Set(twice)],
      message: `gateway.openSession: tools: the name(s) ${[...new Set(twice)].join(', ')} occur more than once`,
    });
  }
  // MCP wants an object schema for every tool: the same JSON Schema the agent loop shows a model.
  const listed = toolSchemas(settings.tools).map((schema) => ({
    name: schema.function.name,
    description: schema.function.description,
    inputSchema: schema.function.parameters as { type: 'object'; [key: string]: unknown },
  }));
  const budget = createBudget(settings.budget ?? {});
  const logger = settings.logger ?? silentLogger;
  const state = settings.state ?? new Map<string, unknown>();
  const ended = new AbortController();
  const records: GatewayToolCallRecord[] = [];
  const inFlight = new Set<Promise<unknown>>();
  let nextIndex = 0;

  async function callTool(name: string, args: Record<string, unknown>, signal: AbortSignal) {
    const index = nextIndex++;
    const startedAt = now();
    const started = performance.now();
    const argumentsText = JSON.stringify(args);
    const linked = linkSignals([ended.signal, signal]);
    try {
      const call = {
        id: `mcp_${index}`,
        type: 'function' as const,
        function: { name, arguments: argumentsText },
      };
      // Each MCP call is a turn of its own for the result budgets (the client decides what it batches).
      const results = await runTurnToolCalls([call], index + 1, {
        toolByName,
        budget,
        signal: linked.signal,
        sandbox: settings.sandbox,
        logger,
        rolloutId,
        toolContext: {
          sandbox: settings.sandbox,
          taskId: settings.taskId ?? rolloutId,
          rolloutId,
          logger,
          ...(settings.userTask !== undefined ? { userTask: settings.userTask } : {}),
          state,
        },
        beforeToolCall: settings.beforeToolCall,
      });
      const message = results.toolMessages[0] as (ChatMessage & { content: string }) | undefined;
      const step = results.stepCalls[0];
      if (results.aborted || !message || !step) {
        const reason = ended.signal.aborted ? 'the rollout ended' : 'the call was cancelled';
        records.push({
          index,
          name,
          arguments: argumentsText,
          result: '',
          error: `aborted: ${reason}`,
          refused: false,
          persisted: false,
          startedAt,
          durationMs: performance.now() - started,
        });
        return { content: [{ type: 'text' as const, text: `Error: ${reason}` }], isError: true };
      }
      const isError = results.toolErrors.length > 0;
      records.push({
        index,
        name,
        arguments: argumentsText,
        result: message.content,
        error: step.error ?? null,
        refused: results.policyRefusals > 0,
        persisted: step.persisted === true,
        startedAt,
        durationMs: performance.now() - started,
      });
      return { content: [{ type: 'text' as const, text: message.content }], isError };
    } finally {
      linked.dispose();
    }
  }

  type McpSession = {
    server: InstanceType<Sdk['Server']>;
    transport: InstanceType<Sdk['StreamableHTTPServerTransport']>;
  };
  /** This rollout's MCP sessions by id, oldest first. */
  const sessions = new Map<string, McpSession>();
  let closing = false;

  const dropSession = (id: string, reason: string) => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    logger.debug('gateway: MCP session ended', { rolloutId, sessionId: id, reason });
    void session.server.close();
  };

  /** A server and a transport for a new MCP session (registered once its `initialize` succeeds). */
  async function openSession(): Promise<McpSession> {
    const { Server, StreamableHTTPServerTransport, ListToolsRequestSchema, CallToolRequestSchema } =
      await loadSdk();
    const server = new Server(
      { name: 'shears', version: '0.1.0' },
      {
        capabilities: { tools: {} },
        instructions: `The tools of shears rollout ${rolloutId}; they run in its sandbox.`,
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
      const work = callTool(call.params.name, call.params.arguments ?? {}, extra.signal);
      inFlight.add(work);
      try {
        return await work;
      } finally {
        inFlight.delete(work);
      }
    });
    let session: McpSession | undefined;
    // Plain JSON answers to POSTs (no stream to keep open per call); a client's GET stream stays open.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomId('mcp-'),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        if (!session) return;
        sessions.set(id, session);
        // A client that keeps initializing without deleting its sessions: the oldest goes (its
        // client gets a 404 and may initialize again), so a rollout holds a bounded number.
        for (const [oldest] of sessions) {
          if (sessions.size <= MAX_SESSIONS) break;
          logger.warn('gateway: MCP session limit reached, closing the oldest', {
            rolloutId,
            limit: MAX_SESSIONS,
          });
          dropSession(oldest, `more than ${MAX_SESSIONS} MCP sessions`);
        }
      },
      onsessionclosed: (id) => dropSession(id, 'the client deleted it'),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) dropSession(transport.sessionId, 'closed');
    };
    session = { server, transport };
    await server.connect(transport);
    return session;
  }

  return {
    async handle(request, response) {
      const header = request.headers['mcp-session-id'];
      const id = typeof header === 'string' ? header : undefined;
      if (id !== undefined) {
        const session = sessions.get(id);
        if (!session || closing) {
          request.resume();
          // The transport's own answer to an unknown session (404, JSON-RPC -32001): the client
          // starts a new session. Ids of other rollouts' sessions are unknown here by construction.
          sendJson(response, 404, {
            jsonrpc: '2.0',
            error: {
              code: -32001,
              message: `Session not found: MCP session "${id.slice(0, 100)}" is not open at the endpoint of rollout "${rolloutId}"; initialize a new one`,
            },
            id: null,
          });
          return;
        }
        await session.transport.handleRequest(request, response);
        return;
      }
      // No session id: an `initialize` opens a session; anything else gets the transport's 400.
      const session = await openSession();
      try {
        await session.transport.handleRequest(request, response);
      } finally {
        if (session.transport.sessionId === undefined || closing) void session.server.close();
      }
    },
    calls: () => records.map((record) => ({ ...record })),
    async close() {
      closing = true;
      ended.abort(new Error('the rollout ended'));
      await Promise.allSettled([...inFlight]);
      // Ends the sessions' open streams; later requests are refused by the gateway (401).
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(open.map((session) => session.server.close()));
    },
  };
}
