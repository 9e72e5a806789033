// Typed errors for shears. Every error extends ShearsError, carries a Symbol.for marker (so
// `isInstance` works across duplicated package copies) and structured fields, and wraps its
// cause with `{ cause }`.

const marker = Symbol.for('shears.error');

export class ShearsError extends Error {
  readonly [marker] = true;
  /** Stable machine-readable code, e.g. `SHEARS_NO_SUCH_ENTRY`. */
  readonly code: string;

  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? 'SHEARS_ERROR';
  }

  static isInstance(error: unknown): error is ShearsError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }
}

function hasCode(error: unknown, code: string): boolean {
  return ShearsError.isInstance(error) && error.code === code;
}

/** Bad user input: options, config values, tool arguments. */
export class InvalidArgumentError extends ShearsError {
  readonly argument: string;
  readonly value: unknown;
  constructor(options: { argument: string; value?: unknown; message: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_INVALID_ARGUMENT', cause: options.cause });
    this.argument = options.argument;
    this.value = options.value;
  }
  static override isInstance(error: unknown): error is InvalidArgumentError {
    return hasCode(error, 'SHEARS_INVALID_ARGUMENT');
  }
}

/** A lookup by kind and id that found nothing; the message lists what is available. */
export class NoSuchEntryError extends ShearsError {
  readonly kind: string;
  readonly id: string;
  readonly available: readonly string[];
  constructor(options: { kind: string; id: string; available: readonly string[]; hint?: string }) {
    const list = options.available.length > 0 ? options.available.join(', ') : 'none registered';
    super(
      `No ${options.kind} "${options.id}" (available: ${list})${options.hint ? `. ${options.hint}` : ''}`,
      { code: 'SHEARS_NO_SUCH_ENTRY' },
    );
    this.kind = options.kind;
    this.id = options.id;
    this.available = options.available;
  }
  static override isInstance(error: unknown): error is NoSuchEntryError {
    return hasCode(error, 'SHEARS_NO_SUCH_ENTRY');
  }
}

/** External data that is not valid JSON, or JSON of the wrong shape. */
export class JsonParseError extends ShearsError {
  readonly text: string;
  readonly position: number | undefined;
  readonly source: string;
  constructor(options: {
    source: string;
    text: string;
    position?: number;
    message: string;
    cause?: unknown;
  }) {
    super(options.message, { code: 'SHEARS_JSON_PARSE', cause: options.cause });
    this.text = options.text;
    this.position = options.position;
    this.source = options.source;
  }
  static override isInstance(error: unknown): error is JsonParseError {
    return hasCode(error, 'SHEARS_JSON_PARSE');
  }
}

/** A sandbox could not be created, died, or failed an operation (an infrastructure failure). */
export class SandboxError extends ShearsError {
  readonly sandboxId: string | undefined;
  constructor(options: { message: string; sandboxId?: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_SANDBOX', cause: options.cause });
    this.sandboxId = options.sandboxId;
  }
  static override isInstance(error: unknown): error is SandboxError {
    return hasCode(error, 'SHEARS_SANDBOX');
  }
}

/** An inference server call failed. `retryable` says whether trying again may help. */
export class ServerError extends ShearsError {
  readonly endpoint: string | undefined;
  readonly model: string | undefined;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(options: {
    message: string;
    endpoint?: string;
    model?: string;
    status?: number;
    retryable?: boolean;
    retryAfterMs?: number;
    cause?: unknown;
  }) {
    super(options.message, { code: 'SHEARS_SERVER', cause: options.cause });
    this.endpoint = options.endpoint;
    this.model = options.model;
    this.status = options.status;
    this.retryable = options.retryable ?? true;
    this.retryAfterMs = options.retryAfterMs;
  }
  static override isInstance(error: unknown): error is ServerError {
    return hasCode(error, 'SHEARS_SERVER');
  }
}

/** A judge could not produce a valid verdict. Never to be read as a score of 0. */
export class JudgeError extends ShearsError {
  readonly judgeId: string | undefined;
  constructor(options: { message: string; judgeId?: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_JUDGE', cause: options.cause });
    this.judgeId = options.judgeId;
  }
  static override isInstance(error: unknown): error is JudgeError {
    return hasCode(error, 'SHEARS_JUDGE');
  }
}

/**
 * The env's own code failed: its reward threw (anything but a sandbox, server, judge or abort
 * error) or returned no finite score. A bug in the env, not infrastructure: never retried, and
 * the rollout ends as `env_error`.
 */
export class EnvError extends ShearsError {
  readonly envId: string;
  constructor(options: { message: string; envId: string; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_ENV', cause: options.cause });
    this.envId = options.envId;
  }
  static override isInstance(error: unknown): error is EnvError {
    return hasCode(error, 'SHEARS_ENV');
  }
}

/** An operation ran past its time limit. */
export class TimeoutError extends ShearsError {
  readonly timeoutMs: number;
  constructor(options: { message: string; timeoutMs: number; cause?: unknown }) {
    super(options.message, { code: 'SHEARS_TIMEOUT', cause: options.cause });
    this.timeoutMs = options.timeoutMs;
  }
  static override isInstance(error: unknown): error is TimeoutError {
    return hasCode(error, 'SHEARS_TIMEOUT');
  }
}

/** An operation was cancelled through its AbortSignal. */
export class AbortedError extends ShearsError {
  constructor(options: { message?: string; cause?: unknown } = {}) {
    super(options.message ?? 'The operation was aborted', { code: 'SHEARS_ABORTED', cause: options.cause });
  }
  static override isInstance(error: unknown): error is AbortedError {
    return hasCode(error, 'SHEARS_ABORTED');
  }
}

/** A configuration file or object failed validation; `issues` name each field, value and what is allowed. */
export class ConfigError extends ShearsError {
  readonly issues: readonly { path: string; message: string; value?: unknown }[];
  constructor(options: {
    message: string;
    issues?: readonly { path: string; message: string; value?: unknown }[];
    cause?: unknown;
  }) {
    super(options.message, { code: 'SHEARS_CONFIG', cause: options.cause });
    this.issues = options.issues ?? [];
  }
  static override isInstance(error: unknown): error is ConfigError {
    return hasCode(error, 'SHEARS_CONFIG');
  }
}

/** Throws AbortedError when the signal is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
}

/** A one-line description of any thrown value, for messages and logs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
