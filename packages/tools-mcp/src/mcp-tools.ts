// MCP servers' tools as shears tools. At start each server is asked for its tools once (a stdio
// server on this machine, an HTTP server at its URL); each tool becomes a ToolV1 whose name is
// prefixed or mapped, whose JSON Schema is passed through (checked with Ajv first), and whose calls
// go, per rollout, to that rollout's own server: a stdio server is spawned inside the rollout's
// sandbox on the first call (so its effects land there) and dies with the sandbox; an HTTP server
// gets one client session per rollout, or one shared session with `pool: true`.
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxV1, ToolContext, ToolOutput, ToolV1 } from '@shears/core';
import { describeError } from '@shears/core';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { McpServerError, McpToolDefinitionError } from './errors.js';
import { mapCallToolResult } from './result-mapping.js';
import { SandboxStdioTransport } from './sandbox-stdio-transport.js';
import {
  type McpHttpServerSettings,
  type McpServerSettings,
  type McpStdioServerSettings,
  type McpToolsSettings,
  parseMcpToolsSettings,
  resolveHeaders,
} from './settings.js';

const CLIENT_INFO = { name: 'shears', version: '0.1.0' };
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** Tool names chat APIs accept. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const STATE_KEY = 'shears.tools-mcp.connections';

export interface CreateMcpToolsOptions {
  /** Environment for `${NAME}` in HTTP headers (default: process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** fetch for HTTP servers (tests). */
  fetch?: typeof fetch;
}

interface Connection {
  client: Client;
  transport: Transport;
  /** Why the connection ended, when it did. */
  failure(): string | undefined;
  closed: boolean;
}

/** Builds the error for a failure of `server`, with what the process left on stderr. */
function serverError(
  server: string,
  phase: 'start' | 'list' | 'call',
  transport: Transport | undefined,
  error: unknown,
  tool?: string,
): McpServerError {
  const stdio = transport instanceof SandboxStdioTransport ? transport : undefined;
  const hostStderr = transport instanceof StdioClientTransport ? hostStderrTail.get(transport) : undefined;
  const status =
    error instanceof StreamableHTTPError && error.code !== undefined ? ` (HTTP ${error.code})` : '';
  // Plain Errors are this module's own wording; others keep their class name.
  const text = error instanceof Error && error.name === 'Error' ? error.message : describeError(error);
  const reason = stdio?.failure ?? `${text}${status}`;
  const stderr = (stdio?.stderr ?? hostStderr?.() ?? '').trim();
  const what =
    phase === 'start'
      ? 'could not be started'
      : phase === 'list'
        ? 'could not list its tools'
        : `failed in a call of "${tool}"`;
  return new McpServerError({
    server,
    phase,
    ...(tool ? { tool } : {}),
    message: `MCP server "${server}" ${what}: ${reason}${stderr ? ` (stderr: ${stderr.slice(-500)})` : ''}`,
    cause: error,
  });
}

/** `{workdir}` and `{tempDir}` in a stdio server's args, env and cwd → the sandbox's folders. */
function expandPlaceholders<T extends { args?: string[]; env?: Record<string, string>; cwd?: string }>(
  run: T,
  folders: { workdir: string; tempDir: string },
): T {
  const expand = (value: string) =>
    value.replaceAll('{workdir}', folders.workdir).replaceAll('{tempDir}', folders.tempDir);
  return {
    ...run,
    ...(run.args ? { args: run.args.map(expand) } : {}),
    ...(run.env
      ? { env: Object.fromEntries(Object.entries(run.env).map(([key, value]) => [key, expand(value)])) }
      : {}),
    ...(run.cwd ? { cwd: expand(run.cwd) } : {}),
  };
}

const hostStderrTail = new WeakMap<StdioClientTransport, () => string>();

/** A client over `transport`, initialized within the start time limit; closed again on failure. */
async function connect(server: string, transport: Transport, startTimeoutMs: number): Promise<Connection> {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  const connection: Connection = {
    client,
    transport,
    closed: false,
    failure: () => (transport instanceof SandboxStdioTransport ? transport.failure : undefined),
  };
  client.onclose = () => {
    connection.closed = true;
  };
  try {
    await client.connect(transport, { timeout: startTimeoutMs });
  } catch (error) {
    const typed = serverError(
      server,
      'start',
      transport,
      error instanceof McpError && error.code === ErrorCode.RequestTimeout
        ? new Error(`no answer to initialize within ${startTimeoutMs} ms`, { cause: error })
        : error,
    );
    await client.close().catch(() => undefined);
    throw typed;
  }
  return connection;
}

function hostStdioTransport(settings: McpStdioServerSettings, scratch: string): StdioClientTransport {
  const run = expandPlaceholders(settings.discovery ?? settings, { workdir: scratch, tempDir: scratch });
  const transport = new StdioClientTransport({
    command: run.command,
    args: run.args ?? [],
    env: { ...getDefaultEnvironment(), ...run.env },
    cwd: run.cwd ?? scratch,
    stderr: 'pipe',
  });
  let tail = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-2000);
  });
  hostStderrTail.set(transport, () => tail);
  return transport;
}

function httpTransport(
  server: string,
  settings: McpHttpServerSettings,
  options: CreateMcpToolsOptions,
): StreamableHTTPClientTransport {
  const headers = resolveHeaders(server, settings.headers, options.env ?? process.env);
  return new StreamableHTTPClientTransport(new URL(settings.url), {
    requestInit: { headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

/** Ends the MCP session (HTTP: DELETE, where the server keeps sessions) and closes the client. */
async function closeConnection(connection: Connection): Promise<void> {
  if (connection.closed) return;
  if (connection.transport instanceof StreamableHTTPClientTransport && connection.transport.sessionId) {
    await connection.transport.terminateSession().catch(() => undefined);
  }
  await connection.client.close().catch(() => undefined);
}

/** Every tool the server lists (following pagination). */
async function listAllTools(server: string, connection: Connection, timeoutMs: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  try {
    do {
      const page = await connection.client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
  } catch (error) {
    throw serverError(server, 'list', connection.transport, error);
  }
  return tools;
}

const ajv07 = new Ajv({ strict: false, validateFormats: false, allErrors: true });
const ajv2020 = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

/** A validator for a tool's input schema; an invalid schema is a McpToolDefinitionError. */
function compileInputSchema(server: string, tool: Tool) {
  const schema = tool.inputSchema as Record<string, unknown>;
  if (schema === null || typeof schema !== 'object' || schema.type !== 'object') {
    throw new McpToolDefinitionError({
      server,
      tool: tool.name,
      message: `MCP server "${server}" lists tool "${tool.name}" with an input schema that is not { type: "object" } (${JSON.stringify(schema)?.slice(0, 200)})`,
    });
  }
  const draft07 = typeof schema.$schema === 'string' && /draft-0[4-7]/.test(schema.$schema);
  try {
    return (draft07 ? ajv07 : ajv2020).compile(schema);
  } catch (error) {
    throw new McpToolDefinitionError({
      server,
      tool: tool.name,
      message: `MCP server "${server}" lists tool "${tool.name}" with an invalid input schema: ${(error as Error).message}`,
      cause: error,
    });
  }
}

/** The per-rollout connections, by server and sandbox. */
function rolloutConnections(state: Map<string, unknown>): Map<string, Promise<Connection>> {
  let connections = state.get(STATE_KEY) as Map<string, Promise<Connection>> | undefined;
  if (!connections) {
    connections = new Map();
    state.set(STATE_KEY, connections);
  }
  return connections;
}

/** A connection lent to one call; `release` when the call is over. */
interface Lease {
  pending: Promise<Connection>;
  release(): void;
}

/** How one server's tools reach their server during rollouts. */
interface ServerHandle {
  name: string;
  settings: McpServerSettings;
  lease(context: ToolContext): Lease;
  forget(context: ToolContext, connection: Promise<Connection>): void;
  /** Stops what the handle keeps beyond single rollouts (pooled servers); idempotent. */
  close(): Promise<void>;
  /** Kills pooled server processes at once (process exit). */
  killNow(): void;
}

const noRelease = () => undefined;
const nothingToClose = async () => undefined;

/**
 * A pool of `size` stdio server processes on this machine, shared by every rollout: started
 * lazily (a new one only when every running one is busy), a call goes to the least busy; a
 * process that ends (crash, kill) leaves the pool and the next call starts a fresh one.
 */
function stdioPoolHandle(
  name: string,
  settings: McpStdioServerSettings & { pool: { size: number } },
  startTimeoutMs: number,
): ServerHandle {
  interface Member {
    pending: Promise<Connection>;
    transport?: StdioClientTransport;
    busy: number;
  }
  const members: Member[] = [];
  let scratch: Promise<string> | undefined;
  /** The scratch folder once made, for the synchronous clean-up at exit. */
  let scratchPath: string | undefined;
  let closed = false;
  const closedError = () =>
    new McpServerError({
      server: name,
      phase: 'call',
      message: `MCP server "${name}": its pool was closed (the run is over)`,
    });
  const drop = (member: Member) => {
    const index = members.indexOf(member);
    if (index >= 0) members.splice(index, 1);
  };
  const start = (): Member => {
    scratch ??= mkdtemp(join(tmpdir(), `shears-mcp-pool-${name}-`)).then((folder) => {
      scratchPath = folder;
      return folder;
    });
    const member: Member = { busy: 0, pending: Promise.resolve(undefined as never) };
    member.pending = scratch.then(async (folder) => {
      if (closed) throw closedError();
      const { discovery: _discovery, ...run } = settings;
      // The pool's own scratch folder is the working directory unless cwd (absolute) says otherwise.
      const transport = hostStdioTransport({ ...run, cwd: settings.cwd ?? folder }, folder);
      member.transport = transport;
      const connection = await connect(name, transport, startTimeoutMs);
      const onclose = connection.client.onclose;
      connection.client.onclose = () => {
        onclose?.();
        drop(member);
      };
      return connection;
    });
    member.pending.catch(() => drop(member));
    members.push(member);
    return member;
  };
  return {
    name,
    settings,
    lease() {
      if (closed) return { pending: Promise.reject(closedError()), release: noRelease };
      const idle = members.find((member) => member.busy === 0);
      const member =
        idle ??
        (members.length < settings.pool.size
          ? start()
          : members.reduce((least, candidate) => (candidate.busy < least.busy ? candidate : least)));
      member.busy++;
      let released = false;
      return {
        pending: member.pending,
        release: () => {
          if (released) return;
          released = true;
          member.busy--;
        },
      };
    },
    forget(_context, connection) {
      const member = members.find((entry) => entry.pending === connection);
      if (member) drop(member);
      void connection.then((opened) => opened.client.close()).catch(() => undefined);
    },
    async close() {
      closed = true;
      const all = members.splice(0);
      await Promise.all(
        all.map((member) => member.pending.then((opened) => opened.client.close()).catch(() => undefined)),
      );
      if (scratch)
        await rm(await scratch.catch(() => ''), { recursive: true, force: true }).catch(() => undefined);
    },
    killNow() {
      closed = true;
      if (scratchPath) rmSync(scratchPath, { recursive: true, force: true });
      for (const member of members.splice(0)) {
        const pid = member.transport?.pid;
        if (pid !== null && pid !== undefined) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone already.
          }
        }
      }
    },
  };
}

function serverHandle(
  name: string,
  settings: McpServerSettings,
  options: CreateMcpToolsOptions,
): ServerHandle {
  const startTimeoutMs = settings.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  if (settings.transport === 'stdio' && settings.pool)
    return stdioPoolHandle(name, { ...settings, pool: settings.pool }, startTimeoutMs);
  const open = (sandbox: SandboxV1): Promise<Connection> => {
    if (settings.transport === 'http')
      return connect(name, httpTransport(name, settings, options), startTimeoutMs);
    if (!sandbox.spawn) {
      return Promise.reject(
        new McpServerError({
          server: name,
          phase: 'start',
          message: `MCP server "${name}" could not be started: the "${sandbox.backend}" sandbox backend cannot spawn processes (stdio MCP servers run inside the rollout's sandbox; use local or docker)`,
        }),
      );
    }
    const run = expandPlaceholders(settings, sandbox);
    const transport = new SandboxStdioTransport({
      sandbox,
      command: run.command,
      ...(run.args ? { args: run.args } : {}),
      ...(run.env ? { env: run.env } : {}),
      ...(run.cwd ? { cwd: run.cwd } : {}),
    });
    return connect(name, transport, startTimeoutMs);
  };
  if (settings.transport === 'http' && settings.pool) {
    let shared: Promise<Connection> | undefined;
    return {
      name,
      settings,
      lease(context) {
        shared ??= open(context.sandbox);
        shared.catch(() => {
          shared = undefined;
        });
        return { pending: shared, release: noRelease };
      },
      forget(_context, connection) {
        if (shared === connection) shared = undefined;
      },
      async close() {
        const connection = await shared?.catch(() => undefined);
        shared = undefined;
        if (connection) await closeConnection(connection);
      },
      killNow: noRelease,
    };
  }
  return {
    name,
    settings,
    lease(context) {
      const connections = rolloutConnections(context.state);
      const key = `${name}\0${context.sandbox.id}`;
      let found = connections.get(key);
      if (!found) {
        const opening = open(context.sandbox);
        found = opening;
        connections.set(key, opening);
        opening.catch(() => {
          if (connections.get(key) === opening) connections.delete(key);
        });
        // Closed when the rollout ends: an HTTP session is ended (DELETE), a stdio server stopped.
        context.onRolloutEnd?.(async () => {
          const connection = await opening.catch(() => undefined);
          if (connection) await closeConnection(connection);
        });
      }
      return { pending: found, release: noRelease };
    },
    forget(context, connection) {
      const connections = rolloutConnections(context.state);
      const key = `${name}\0${context.sandbox.id}`;
      if (connections.get(key) === connection) connections.delete(key);
      void connection.then((opened) => opened.client.close()).catch(() => undefined);
    },
    close: nothingToClose,
    killNow: noRelease,
  };
}

function mcpTool(handle: ServerHandle, tool: Tool, offeredName: string): ToolV1<Record<string, unknown>> {
  const validate = compileInputSchema(handle.name, tool);
  const inputSchema = z.record(z.string(), z.unknown()).superRefine((value, context) => {
    if (validate(value)) return;
    for (const issue of validate.errors ?? []) {
      context.addIssue({
        code: 'custom',
        message: `${issue.instancePath || '(arguments)'} ${issue.message ?? 'is invalid'}`,
      });
    }
  });
  const { settings } = handle;
  const timeoutMs = settings.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    specificationVersion: 'v1',
    name: offeredName,
    description: tool.description ?? tool.title ?? `${tool.name} (MCP server ${handle.name})`,
    inputSchema,
    jsonSchema: tool.inputSchema as Record<string, unknown>,
    toolset: settings.toolset ?? 'mcp',
    ...(settings.maxResultChars !== undefined ? { maxResultChars: settings.maxResultChars } : {}),
    async execute(args, context): Promise<ToolOutput> {
      let lease = handle.lease(context);
      try {
        let connection = await lease.pending;
        if (connection.closed) {
          // The server ended between calls (crashed, killed): this call starts a fresh one.
          handle.forget(context, lease.pending);
          lease.release();
          lease = handle.lease(context);
          connection = await lease.pending;
        }
        try {
          // The SDK sends notifications/cancelled when the signal aborts or the time limit passes.
          const result = await connection.client.callTool({ name: tool.name, arguments: args }, undefined, {
            signal: context.signal,
            timeout: timeoutMs,
          });
          return mapCallToolResult(result, { images: settings.images ?? 'note' });
        } catch (error) {
          if (context.signal.aborted) throw error;
          const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
          if (connection.closed || connection.failure() !== undefined) handle.forget(context, lease.pending);
          throw serverError(
            handle.name,
            'call',
            connection.transport,
            timedOut
              ? new Error(`no result within ${timeoutMs} ms (the call was cancelled)`, { cause: error })
              : error,
            tool.name,
          );
        }
      } finally {
        lease.release();
      }
    },
  };
}

/** The server handle behind each tool this module made (for closeMcpTools). */
const toolHandles = new WeakMap<ToolV1, ServerHandle>();
/** Handles holding pooled processes, killed at process exit if nobody closed them. */
const pooledHandles = new Set<ServerHandle>();
let exitHookInstalled = false;

function trackPool(handle: ServerHandle): void {
  pooledHandles.add(handle);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: SIGKILL whatever is left (the CLI ends with process.exit).
  process.once('exit', () => {
    for (const pooled of pooledHandles) pooled.killNow();
  });
}

/**
 * Stops what the tools keep beyond single rollouts: pooled stdio server processes and pooled HTTP
 * sessions. Call it when the run is over; per-rollout servers end with their rollouts anyway.
 * Tools not made by createMcpTools are ignored. Pooled processes left open are killed at exit.
 */
export async function closeMcpTools(tools: readonly ToolV1[]): Promise<void> {
  const handles = new Set<ServerHandle>();
  for (const tool of tools) {
    const handle = toolHandles.get(tool);
    if (handle) handles.add(handle);
  }
  await Promise.all(
    [...handles].map(async (handle) => {
      await handle.close();
      pooledHandles.delete(handle);
    }),
  );
}

/** Lists one server's tools once, on this machine (stdio) or at its URL (HTTP). */
async function discoverTools(
  name: string,
  settings: McpServerSettings,
  options: CreateMcpToolsOptions,
): Promise<Tool[]> {
  const startTimeoutMs = settings.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  // A stdio server is listed in a scratch folder that stands in for the sandbox's workdir.
  const scratch = settings.transport === 'stdio' ? await mkdtemp(join(tmpdir(), 'shears-mcp-')) : undefined;
  try {
    const transport =
      settings.transport === 'stdio'
        ? hostStdioTransport(settings, scratch!)
        : httpTransport(name, settings, options);
    const connection = await connect(name, transport, startTimeoutMs);
    try {
      return await listAllTools(name, connection, settings.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    } finally {
      await connection.client.close().catch(() => undefined);
    }
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The tools of every server in `settings`, as shears tools. Lists each server's tools now: a server
 * that cannot start, a tool with an invalid schema or name, and two tools with one name are errors
 * here, before any rollout.
 */
export async function createMcpTools(
  settings: McpToolsSettings | Record<string, unknown>,
  options: CreateMcpToolsOptions = {},
): Promise<ToolV1[]> {
  const config = parseMcpToolsSettings(settings);
  const tools: ToolV1[] = [];
  const owners = new Map<string, string>();
  for (const [name, server] of Object.entries(config.servers)) {
    const listed = await discoverTools(name, server, options);
    const handle = serverHandle(name, server, options);
    if (server.transport === 'stdio' && server.pool) trackPool(handle);
    const known = new Set(listed.map((tool) => tool.name));
    for (const wanted of [...(server.include ?? []), ...Object.keys(server.rename ?? {})]) {
      if (!known.has(wanted))
        throw new McpToolDefinitionError({
          server: name,
          tool: wanted,
          message: `MCP server "${name}" has no tool "${wanted}" (named in include/rename; it lists: ${[...known].sort().join(', ') || 'none'})`,
        });
    }
    for (const tool of listed) {
      if (server.include && !server.include.includes(tool.name)) continue;
      const offered = server.rename?.[tool.name] ?? `${server.prefix ?? `${name}__`}${tool.name}`;
      if (!TOOL_NAME.test(offered))
        throw new McpToolDefinitionError({
          server: name,
          tool: tool.name,
          message: `MCP server "${name}": tool "${tool.name}" would be offered as "${offered}", which is not a valid tool name (letters, digits, _ and -, at most 64); map it with rename`,
        });
      const origin = `"${tool.name}" of MCP server "${name}"`;
      const clash = owners.get(offered);
      if (clash)
        throw new McpToolDefinitionError({
          server: name,
          tool: tool.name,
          message: `Tool name "${offered}" is taken twice: by ${clash} and by ${origin}; give one a different prefix or rename it`,
        });
      owners.set(offered, origin);
      const made = mcpTool(handle, tool, offered);
      toolHandles.set(made, handle);
      tools.push(made);
    }
  }
  return tools;
}
