// Helpers for scripted judge models in tests: read what a judge request shows (its nonce, its
// candidates and their labels, the task) and answer the way a judge model would, nonce included.
// The scripted server is a real HTTP server; only the model behind it is a script.
import type { ScriptedChatRequest } from '@shears/core/test';

/**
 * The nonce the request asks to be echoed ('' when it asks for none, as the prompts before the
 * nonce did). Read from the system message, as a model told to echo it would; deliberately not
 * through the package's own helper, so these scripts also run against older prompts.
 */
export function nonceOf(request: ScriptedChatRequest): string {
  const system = request.messages.find((message) => message.role === 'system');
  return /"nonce": "([a-z0-9]+)" exactly/.exec(String(system?.content ?? ''))?.[1] ?? '';
}

/** `reply` as a JSON answer to `request`, carrying its nonce (when it has one) first. */
export function signed(request: ScriptedChatRequest, reply: Record<string, unknown>): string {
  const nonce = nonceOf(request);
  return JSON.stringify(nonce ? { nonce, ...reply } : reply);
}

/** The text of the last user message of a judge request. */
export function promptOf(request: ScriptedChatRequest): string {
  return String(request.messages[request.messages.length - 1]?.content ?? '');
}

/** The candidates a group or pairwise request shows, in order: each label and its transcript. */
export function candidatesOf(request: ScriptedChatRequest): Array<{ label: string; text: string }> {
  const prompt = promptOf(request);
  const found: Array<{ label: string; text: string }> = [];
  const begin = /^⟦[a-z0-9]+⟧ BEGIN UNTRUSTED TRANSCRIPT OF CANDIDATE (\S+)$/gm;
  for (let match = begin.exec(prompt); match; match = begin.exec(prompt)) {
    const label = match[1]!;
    const end = prompt.indexOf(`END UNTRUSTED TRANSCRIPT OF CANDIDATE ${label}`, match.index);
    found.push({ label, text: prompt.slice(match.index + match[0].length, end) });
  }
  return found;
}
