// One judge model call with the judge's own timer and the caller's signal. Every failure comes back
// classified (timeout, aborted, server_error, other), never thrown, so each judge turns it into a
// failed verdict of the right kind rather than a score.
import {
  type ChatClient,
  type ChatRequest,
  type ChatResponse,
  describeError,
  ServerError,
} from '@shears/core';

type JudgeChatFailureKind = 'timeout' | 'aborted' | 'server_error' | 'other';

type JudgeChatResult =
  | { ok: true; response: ChatResponse }
  | { ok: false; kind: JudgeChatFailureKind; reason: string };

export async function judgeChat(
  server: ChatClient,
  request: Omit<ChatRequest, 'signal' | 'timeoutMs'>,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<JudgeChatResult> {
  const { timeoutMs, signal } = options;
  // An already-aborted signal never fires 'abort' again: check it before calling.
  if (signal?.aborted) return { ok: false, kind: 'aborted', reason: 'judging was cancelled' };
  // Our own timer, not only the server's: a client that ignores `timeoutMs` must not hang us.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`judge timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const stopped = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
    });
    const response = await Promise.race([
      server.chat({ ...request, timeoutMs, signal: controller.signal }),
      stopped,
    ]);
    return { ok: true, response };
  } catch (error) {
    if (timedOut) return { ok: false, kind: 'timeout', reason: `no verdict within ${timeoutMs} ms` };
    if (signal?.aborted) return { ok: false, kind: 'aborted', reason: 'judging was cancelled' };
    return {
      ok: false,
      kind: ServerError.isInstance(error) ? 'server_error' : 'other',
      reason: describeError(error),
    };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
