// Phase-2 managed servers for RL (vLLM, SGLang): the client renders the chat template itself,
// sends token ids, keeps special tokens, parses tool calls with the configured parser, and
// records per rollout the exact tokens, the mask of generated tokens and their logprobs.
// Each turn's prompt must extend the recorded tokens exactly; when the template re-renders
// history differently, the record is split into a new sequence (and counted), never
// silently re-tokenized.
import { randomUUID } from 'node:crypto';
import {
  type AssistantMessage,
  type ChatRequest,
  type ChatResponse,
  InvalidArgumentError,
  ServerError,
  type ServerSessionV1,
  type ServerV1,
  type TokenizerV1,
  type TokenRecord,
  type TokenSequence,
  type ToolCall,
  type ToolCallParserV1,
} from '@shears/core';
import { type RetrySettings, resolveRetrySettings, withRetries } from '@shears/core/http';
import {
  createSglangBackend,
  createVllmBackend,
  type GenerateBackend,
  type GeneratedSequence,
  type VllmApi,
} from './generate-backends.js';

export interface ManagedServerSettings {
  /** Server origin, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  model: string;
  tokenizer: TokenizerV1;
  /** Turns raw completion text into tool calls (e.g. `getParser('hermes')` from @shears/parsers). */
  parser?: ToolCallParserV1;
  /** Reasoning markers split off into `reasoning_content` (default `<think>`/`</think>`; false: keep in content). */
  reasoning?: { start: string; end: string } | false;
  /** Extra chat-template variables (e.g. `{ enable_thinking: false }`). */
  templateVariables?: Record<string, unknown>;
  /** max_tokens when a request gives none. */
  defaultMaxTokens?: number;
  timeoutMs?: number;
  retry?: RetrySettings;
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** Tool-call id source (default random). */
  newToolCallId?: () => string;
}

export interface VllmServerSettings extends ManagedServerSettings {
  /** `generate` (default): POST /generate; `completions`: POST /v1/completions with token-id prompts. */
  api?: VllmApi;
}

export type SglangServerSettings = ManagedServerSettings;

export interface ManagedServer extends ServerV1 {
  openSession(options: { rolloutId: string }): ManagedSession;
  /** Liveness probe URL (no completion is spent). */
  readonly healthUrl: string;
  /** The wire backend and settings, so a server manager can route one session over several endpoints. */
  readonly backend: GenerateBackend;
  readonly settings: ManagedServerSettings;
}

export interface ManagedSession extends ServerSessionV1 {
  readonly rolloutId: string;
  /** Characters tokenized by the last call (only the new suffix when the prompt extended the record). */
  readonly lastEncodedChars: number;
}

interface OpenSequence {
  tokens: number[];
  masks: number[];
  logprobs: number[];
  /** The text the tokens stand for: rendered prompts and decoded completions, special tokens kept. */
  text: string;
  /** Policy version of each generated turn, when the server sent one. */
  policyVersions?: number[];
}

function copySequence(sequence: OpenSequence | TokenSequence): TokenSequence {
  return {
    tokens: sequence.tokens.slice(),
    masks: sequence.masks.slice(),
    logprobs: sequence.logprobs.slice(),
    ...(sequence.policyVersions ? { policyVersions: sequence.policyVersions.slice() } : {}),
  };
}

function validateSettings(settings: ManagedServerSettings, factory: string): void {
  if (typeof settings?.baseUrl !== 'string' || !/^https?:\/\//.test(settings.baseUrl)) {
    throw new InvalidArgumentError({
      argument: 'baseUrl',
      value: settings?.baseUrl,
      message: `${factory}: "baseUrl" must be the server origin, e.g. http://127.0.0.1:8000 (got ${JSON.stringify(settings?.baseUrl)})`,
    });
  }
  if (typeof settings.model !== 'string' || settings.model.length === 0) {
    throw new InvalidArgumentError({
      argument: 'model',
      value: settings.model,
      message: `${factory}: "model" is required`,
    });
  }
  if (!settings.tokenizer || typeof settings.tokenizer.applyChatTemplate !== 'function') {
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      value: settings.tokenizer,
      message: `${factory}: "tokenizer" must be a TokenizerV1, e.g. createHfTokenizer({ dir })`,
    });
  }
}

/** Builds a managed server over any token-in/token-out backend. */
export function createManagedServer(
  settings: ManagedServerSettings,
  backend: GenerateBackend,
): ManagedServer {
  const { tokenizer } = settings;
  const retry = resolveRetrySettings(settings.retry);
  const reasoning =
    settings.reasoning === undefined ? { start: '<think>', end: '</think>' } : settings.reasoning;
  const stopIds = new Set(tokenizer.stopTokenIds);
  const newToolCallId =
    settings.newToolCallId ?? (() => `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`);

  const render = (request: ChatRequest) =>
    tokenizer.applyChatTemplate(request.messages, {
      tools: request.tools,
      addGenerationPrompt: true,
      variables: settings.templateVariables,
    });

  const generate = (request: ChatRequest, promptIds: number[], n: number) =>
    withRetries(
      () =>
        backend.generate({
          promptIds,
          n,
          maxTokens: request.maxTokens ?? settings.defaultMaxTokens,
          temperature: request.temperature,
          topP: request.topP,
          stop: request.stop,
          seed: request.seed,
          extraBody: request.extraBody,
          timeoutMs: request.timeoutMs ?? settings.timeoutMs ?? 300_000,
          signal: request.signal,
        }),
      retry,
      { signal: request.signal },
    );

  /** Raw completion tokens → assistant message (reasoning split off, tool calls parsed). */
  const toMessage = (
    generated: GeneratedSequence,
    request: ChatRequest,
  ): { message: AssistantMessage; finishReason: string | null } => {
    const ids = generated.tokenIds;
    const endsWithStop = ids.length > 0 && stopIds.has(ids[ids.length - 1] as number);
    let text = tokenizer.decode(endsWithStop ? ids.slice(0, -1) : ids, { skipSpecialTokens: false });
    let reasoningText: string | undefined;
    if (reasoning) {
      const end = text.indexOf(reasoning.end);
      if (end >= 0) {
        let before = text.slice(0, end);
        const start = before.indexOf(reasoning.start);
        if (start >= 0) before = before.slice(start + reasoning.start.length);
        reasoningText = before.replace(/^\n+|\n+$/g, '');
        text = text.slice(end + reasoning.end.length).replace(/^\n+/, '');
      }
    }
    let content: string | null = text;
    let toolCalls: ToolCall[] = [];
    if (settings.parser && request.toolChoice !== 'none') {
      const parsed = settings.parser.parse(text, { tools: request.tools });
      // Templates write content + separator + calls; parsers (like vLLM's) keep the separator in
      // the content. Trimming it lets the template re-render exactly what the model wrote.
      content =
        parsed.toolCalls.length > 0 && parsed.content !== null
          ? parsed.content.replace(/\s+$/, '')
          : parsed.content;
      toolCalls = parsed.toolCalls.map((call) => ({
        id: call.id ?? newToolCallId(),
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    }
    const message: AssistantMessage = {
      role: 'assistant',
      content: toolCalls.length > 0 ? (content === '' ? null : content) : (content ?? ''),
    };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (reasoningText !== undefined) message.reasoning_content = reasoningText;
    const finishReason = toolCalls.length > 0 ? 'tool_calls' : generated.finishReason;
    return { message, finishReason };
  };

  const checkRequest = (request: ChatRequest) => {
    if (!request || !Array.isArray(request.messages) || request.messages.length === 0) {
      throw new InvalidArgumentError({
        argument: 'messages',
        value: request?.messages,
        message: 'chat: request.messages must be a non-empty array',
      });
    }
  };

  const server: ManagedServer = {
    specificationVersion: 'v1',
    provider: backend.provider,
    model: settings.model,
    healthUrl: backend.healthUrl,
    backend,
    settings,
    async chat(request) {
      checkRequest(request);
      const promptIds = tokenizer.encode(render(request), { addSpecialTokens: false });
      const n = request.n ?? 1;
      const results = await generate(request, promptIds, n);
      const choices = results.map((generated, index) => ({ index, ...toMessage(generated, request) }));
      const completionTokens = results.reduce((sum, generated) => sum + generated.tokenIds.length, 0);
      return {
        model: settings.model,
        choices,
        usage: {
          promptTokens: promptIds.length,
          completionTokens,
          totalTokens: promptIds.length + completionTokens,
        },
      };
    },
    openSession({ rolloutId }) {
      const finished: TokenSequence[] = [];
      let current: OpenSequence | undefined;
      let splits = 0;
      let closed = false;
      let lastEncodedChars = 0;
      const session: ManagedSession = {
        rolloutId,
        get lastEncodedChars() {
          return lastEncodedChars;
        },
        async chat(request): Promise<ChatResponse> {
          if (closed) {
            throw new InvalidArgumentError({
              argument: 'session',
              value: rolloutId,
              message: `chat: the session of rollout "${rolloutId}" is closed`,
            });
          }
          checkRequest(request);
          if ((request.n ?? 1) !== 1) {
            throw new InvalidArgumentError({
              argument: 'n',
              value: request.n,
              message:
                'chat: a recording session generates one completion per call (n = 1); use one session per rollout',
            });
          }
          const rendered = render(request);
          let promptIds: number[];
          let masks: number[];
          let logprobs: number[];
          let split = false;
          const extendsRecord = current !== undefined && rendered.startsWith(current.text);
          if (current && extendsRecord) {
            // The prompt extends what was recorded: tokenize only the new suffix. The recorded
            // tokens (including what the model sampled) are kept exactly. The boundary is safe
            // for merges whenever the completion ended in a stop token or the suffix starts with
            // a special token (the usual case); otherwise the model simply sees (and the record
            // keeps) its own sampled tokens followed by the suffix's tokens.
            const suffix = rendered.slice(current.text.length);
            const suffixIds = suffix.length > 0 ? tokenizer.encode(suffix, { addSpecialTokens: false }) : [];
            lastEncodedChars = suffix.length;
            promptIds = current.tokens.concat(suffixIds);
            masks = current.masks.concat(suffixIds.map(() => -100));
            logprobs = current.logprobs.concat(suffixIds.map(() => 1.0));
          } else {
            // First turn, or the template re-rendered history differently: a new sequence.
            split = current !== undefined;
            promptIds = tokenizer.encode(rendered, { addSpecialTokens: false });
            lastEncodedChars = rendered.length;
            masks = promptIds.map(() => -100);
            logprobs = promptIds.map(() => 1.0);
          }
          const [generated] = await generate(request, promptIds, 1);
          if (!generated || generated.logprobs.length !== generated.tokenIds.length) {
            throw new ServerError({
              message: `${backend.provider} server ${backend.endpoint} (model "${settings.model}"): completion has ${generated?.tokenIds.length ?? 0} tokens but ${generated?.logprobs.length ?? 0} logprobs`,
              endpoint: backend.endpoint,
              model: settings.model,
              retryable: false,
            });
          }
          // Commit only after success, so a failed call leaves the record as it was.
          if (split && current) {
            finished.push(copySequence(current));
            splits++;
          }
          // A sequence carries the version of every turn that sampled into it; a server that sends
          // none (vLLM) leaves the field out rather than guessing.
          const earlier = extendsRecord ? current?.policyVersions : undefined;
          const policyVersions =
            generated.policyVersion !== undefined ? [...(earlier ?? []), generated.policyVersion] : earlier;
          current = {
            tokens: promptIds.concat(generated.tokenIds),
            masks: masks.concat(generated.tokenIds),
            logprobs: logprobs.concat(generated.logprobs),
            text: rendered + tokenizer.decode(generated.tokenIds, { skipSpecialTokens: false }),
            ...(policyVersions ? { policyVersions } : {}),
          };
          const choice = toMessage(generated, request);
          return {
            model: settings.model,
            choices: [{ index: 0, ...choice }],
            usage: {
              promptTokens: promptIds.length,
              completionTokens: generated.tokenIds.length,
              totalTokens: promptIds.length + generated.tokenIds.length,
            },
          };
        },
        tokenRecord(): TokenRecord {
          const sequences = finished.map(copySequence);
          if (current) sequences.push(copySequence(current));
          return { sequences, splits };
        },
        close() {
          closed = true;
        },
      };
      return session;
    },
  };
  return server;
}

export function createVllmServer(settings: VllmServerSettings): ManagedServer {
  validateSettings(settings, 'createVllmServer');
  const backend = createVllmBackend({
    baseUrl: settings.baseUrl,
    model: settings.model,
    api: settings.api,
    fetch: settings.fetch,
    headers: settings.headers,
    now: settings.retry?.now,
  });
  return createManagedServer(settings, backend);
}

export function createSglangServer(settings: SglangServerSettings): ManagedServer {
  validateSettings(settings, 'createSglangServer');
  const backend = createSglangBackend({
    baseUrl: settings.baseUrl,
    model: settings.model,
    fetch: settings.fetch,
    headers: settings.headers,
    now: settings.retry?.now,
  });
  return createManagedServer(settings, backend);
}
