// An MCP Transport over a process spawned inside a shears sandbox (`SandboxV1.spawn`): the SDK's
// own newline-delimited JSON framing (ReadBuffer, serializeMessage) over the process's stdio
// streams. No protocol here; only the pipe. Output that is not JSON-RPC ends the connection, so a
// malformed server, or one whose message is over the SDK's size limit, fails its call at once
// instead of leaving it to time out.
import {
  ReadBuffer,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  serializeMessage,
} from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxV1, SpawnedExit, SpawnedProcess, SpawnOptions } from '@shears/core';

const STDERR_TAIL = 2000;

export interface SandboxStdioTransportOptions extends SpawnOptions {
  sandbox: SandboxV1;
  command: string;
  args?: readonly string[];
}

export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private process: SpawnedProcess | undefined;
  private writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  private readonly buffer = new ReadBuffer();
  private readonly encoder = new TextEncoder();
  private closed = false;
  private stderrTail = '';
  /** Why the connection ended when it was not closed by us (crash, malformed output). */
  failure: string | undefined;
  exit: SpawnedExit | undefined;

  constructor(private readonly options: SandboxStdioTransportOptions) {}

  /** The last lines the server wrote to stderr (for error messages). */
  get stderr(): string {
    return this.stderrTail;
  }

  async start(): Promise<void> {
    const { sandbox, command, args = [], ...spawnOptions } = this.options;
    if (!sandbox.spawn)
      throw new Error(
        `the "${sandbox.backend}" sandbox cannot spawn processes (no spawn support), so a stdio MCP server cannot run in it`,
      );
    const child = await sandbox.spawn(command, args, spawnOptions);
    this.process = child;
    this.writer = child.stdin.getWriter();
    void this.pump(child.stdout, (chunk) => this.receive(chunk));
    const decoder = new TextDecoder();
    void this.pump(child.stderr, (chunk) => {
      this.stderrTail = (this.stderrTail + decoder.decode(chunk, { stream: true })).slice(-STDERR_TAIL);
    });
    void child.exited.then((exit) => {
      this.exit = exit;
      if (!this.closed) {
        this.failure ??= `the server process exited (${
          exit.exitCode === null ? `signal ${exit.signal}` : `exit code ${exit.exitCode}`
        })`;
      }
      void this.close();
    });
  }

  private async pump(stream: ReadableStream<Uint8Array>, onChunk: (chunk: Uint8Array) => void) {
    const reader = stream.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        onChunk(value);
      }
    } catch {
      // The process ended; `exited` reports it.
    } finally {
      reader.releaseLock();
    }
  }

  private receive(chunk: Uint8Array): void {
    if (this.closed) return;
    try {
      this.buffer.append(Buffer.from(chunk));
    } catch (error) {
      // The SDK's ReadBuffer refuses a message over its limit (10 MB): end the connection at once,
      // so the call fails with this reason instead of waiting for its time limit.
      this.failure = `the server wrote a message larger than the MCP SDK's stdio limit of ${STDIO_DEFAULT_MAX_BUFFER_SIZE / 1024 / 1024} MB (${(error as Error).message})`;
      this.onerror?.(new Error(this.failure, { cause: error }));
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        this.failure = `the server wrote output that is not JSON-RPC (${(error as Error).message.slice(0, 300)})`;
        this.onerror?.(new Error(this.failure, { cause: error }));
        void this.close();
        return;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.writer || this.closed) throw new Error(this.failure ?? 'the MCP server connection is closed');
    await this.writer.write(this.encoder.encode(serializeMessage(message)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    await this.process?.kill();
    this.writer?.abort().catch(() => undefined);
    this.onclose?.();
  }
}
