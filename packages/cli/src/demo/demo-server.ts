// Starts the scripted demo policy behind the scripted OpenAI-compatible HTTP server and returns
// a ServerV1 that talks to it over HTTP through the real OpenAI-compatible client.
import type { Registry, ServerV1 } from '@shears/core';
import type { ScriptedChatRequest, ScriptedReply } from '@shears/core/scripted';
import { createDemoPolicy } from './demo-policy.js';

const DEMO_MODEL = 'shears-demo-policy';

export interface DemoServerOptions {
  seed?: number;
  model?: string;
  latencyMs?: number;
  /** Per-request timeout of the client (`server.timeout_ms`). */
  timeoutMs?: number;
  registry?: Registry;
  /** Another env's scripted policy (e.g. the SWE env's); default: the shell demo policy. */
  policy?: (request: ScriptedChatRequest) => ScriptedReply | undefined | Promise<ScriptedReply | undefined>;
}

export async function startDemoServer(
  options: DemoServerOptions = {},
): Promise<ServerV1 & { baseUrl: string }> {
  const model = options.model ?? DEMO_MODEL;
  // Loaded on demand: only the demo and scripted-server runs need it (a vitest-free entry point).
  const { createScriptedServer, createScriptedServerClient } = await import('@shears/core/scripted');
  const policy = options.policy ?? createDemoPolicy({ seed: options.seed ?? 0 });
  const scripted = await createScriptedServer({
    policy: (request) => policy(request),
    model,
    latencyMs: options.latencyMs,
  });
  let client: ServerV1;
  if (options.registry?.has('servers', 'openai')) {
    client = await options.registry.create('servers', 'openai', {
      baseUrl: scripted.url,
      model,
      apiKey: 'not-needed',
      provider: 'scripted',
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    });
  } else {
    // Before @shears/servers is registered, the kernel's fetch-based client keeps the demo running.
    client = createScriptedServerClient({ baseUrl: scripted.url, model });
  }
  return {
    specificationVersion: 'v1',
    provider: 'scripted',
    model,
    baseUrl: scripted.url,
    chat: (request) => client.chat(request),
    async close() {
      await client.close?.();
      await scripted.close();
    },
  };
}
