// Whose text a flagged span is: the agent's (what it said, reasoned, put in tool-call arguments,
// and what a tool showed back of it) or the environment's (the task, user turns, tool output the
// agent did not write). The rule: a flagged passage belongs to whoever wrote it FIRST in the
// trajectory. Its text is compared in the screen's squeezed reading (escapes decoded, look-alikes
// folded, only letters and digits), so a file the agent wrote with a heredoc, echo, printf '\x69'
// or a JSON-escaped write_file call and then displayed (cat, a read tool, a test log) is the
// agent's; a web page or a task file that said it first is the environment's, even where the
// agent later quotes it. What the agent routes through a transformation the reading does not undo
// (base64, a cipher, a program that builds the string) reads as the environment's: the screen
// still flags it, and the environment's action (escalate by default) takes it out of what the
// stricter judge sees.
import { type ChatMessage, type JudgeSubject, messageText } from '@shears/core';
import type { TranscriptSource } from './format-trajectory.js';
import { squeezedText } from './screen-text.js';

export type SpanOrigin = 'agent' | 'environment';

/** What attribution reads of a subject: all its messages, its final response and its task. */
export type AttributedSubject = Pick<JudgeSubject, 'messages' | 'finalResponse'> & { task?: string };

/** Where a passage was first written, when that is not where it was flagged. */
export interface FirstWritten {
  source: TranscriptSource | 'task';
  messageIndex: number | null;
}

/** What attribution needs of a span: where it is and what it covers. */
interface LocatedSpan {
  source: TranscriptSource | 'unknown';
  messageIndex: number | null;
  callIndex?: number;
  start: number;
  end: number;
}

export interface Attribution {
  origin: SpanOrigin;
  /** Set when the passage was written first somewhere else (and so decided the origin). */
  firstWrittenAt?: FirstWritten;
}

const AGENT_SOURCES: ReadonlySet<string> = new Set(['assistant', 'reasoning', 'tool_call', 'final_response']);

/** Whether text from this source is the agent's own writing. */
export function agentSource(source: string): boolean {
  return AGENT_SOURCES.has(source);
}

interface Authored {
  agent: boolean;
  source: FirstWritten['source'];
  messageIndex: number | null;
  callIndex?: number;
  text: string;
  squeezed?: string;
}

/** A passage shorter than this (squeezed) says too little to trace; its line is traced instead. */
const MIN_TRACE = 6;
/** At most this much of a span is traced (its start: a forged block's marker, a phrase). */
const MAX_TRACE = 200;

function authoredTexts(subject: AttributedSubject): Authored[] {
  const texts: Authored[] = [];
  if (subject.task) texts.push({ agent: false, source: 'task', messageIndex: null, text: subject.task });
  subject.messages.forEach((message: ChatMessage, messageIndex) => {
    if (message.role !== 'assistant') {
      const source = message.role === 'tool' ? 'tool_result' : message.role === 'user' ? 'user' : 'other';
      texts.push({ agent: false, source, messageIndex, text: messageText(message) });
      return;
    }
    const reasoning = typeof message.reasoning_content === 'string' ? message.reasoning_content : '';
    if (reasoning) texts.push({ agent: true, source: 'reasoning', messageIndex, text: reasoning });
    const content = messageText(message);
    if (content) texts.push({ agent: true, source: 'assistant', messageIndex, text: content });
    (message.tool_calls ?? []).forEach((call, callIndex) => {
      texts.push({
        agent: true,
        source: 'tool_call',
        messageIndex,
        callIndex,
        text: `${call.function.name}(${call.function.arguments})`,
      });
    });
  });
  if (subject.finalResponse)
    texts.push({ agent: true, source: 'final_response', messageIndex: null, text: subject.finalResponse });
  return texts;
}

/** The original text a span points into (as the transcript view cut it from the subject). */
function fieldOf(texts: readonly Authored[], span: LocatedSpan): Authored | undefined {
  return texts.find(
    (entry) =>
      entry.source === span.source &&
      entry.messageIndex === span.messageIndex &&
      (entry.callIndex ?? -1) === (span.callIndex ?? -1),
  );
}

/** The passage of a span that is traced: its first line (or its whole line when that is short). */
function tracedPassage(text: string, start: number, end: number): string {
  const firstLineEnd = text.indexOf('\n', start);
  const stop = Math.min(end, firstLineEnd < 0 ? end : firstLineEnd, start + MAX_TRACE);
  const passage = squeezedText(text.slice(start, stop));
  if (passage.length >= MIN_TRACE) return passage;
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const lineEnd = text.indexOf('\n', end);
  return squeezedText(
    text.slice(lineStart, Math.min(lineEnd < 0 ? text.length : lineEnd, lineStart + MAX_TRACE)),
  );
}

/**
 * Attribution of spans in `subject` (its full messages, not only what a judge was shown: a file
 * written in a message the transcript elided still counts).
 */
export function createAttribution(subject: AttributedSubject): (span: LocatedSpan) => Attribution {
  const texts = authoredTexts(subject);
  const squeezed = (entry: Authored) => {
    entry.squeezed ??= squeezedText(entry.text);
    return entry.squeezed;
  };
  const cache = new Map<string, Authored | undefined>();
  return (span) => {
    const own = agentSource(span.source);
    const field = fieldOf(texts, span);
    if (!field) return { origin: own ? 'agent' : 'environment' };
    const passage = tracedPassage(field.text, span.start, span.end);
    if (passage.length < MIN_TRACE) return { origin: own ? 'agent' : 'environment' };
    if (!cache.has(passage))
      cache.set(
        passage,
        texts.find((entry) => squeezed(entry).includes(passage)),
      );
    const first = cache.get(passage);
    if (!first || first === field || first.agent === own) return { origin: own ? 'agent' : 'environment' };
    return {
      origin: first.agent ? 'agent' : 'environment',
      firstWrittenAt: { source: first.source, messageIndex: first.messageIndex },
    };
  };
}
