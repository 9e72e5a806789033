// Formats a trajectory for a judge prompt as quarantined data: every line the agent or its tools
// wrote starts with "│ " and has its imitations of prompt structure neutralised
// (untrusted-text.ts), so the only lines that read as structure are the formatter's own turn
// markers, and the transcript sits between BEGIN/END lines tagged with the call's nonce.
// Each item is truncated head-and-tail so the judge sees how an output began and ended, and the
// whole transcript is kept under a budget by eliding middle turns (the task and the end matter
// most). The view keeps, per shown piece, where it came from, so the injection screen reads
// exactly what the judge reads and a redaction can be shown in its place.
import { type ChatMessage, messageText } from '@shears/core';
import { createJudgeNonce } from './judge-nonce.js';
import { neutraliseUntrustedText, quoteLines } from './untrusted-text.js';

export interface FormatTrajectoryOptions {
  /** Per-item cap for tool results (characters). */
  maxToolResultChars?: number;
  /** Per-item cap for assistant/user text, reasoning, tool arguments and the final response. */
  maxMessageChars?: number;
  /** Cap for the whole transcript. */
  maxTotalChars?: number;
  /** Include reasoning (thinking) text. */
  includeReasoning?: boolean;
}

/** Keeps the first 40% and the last 60% of `text` when it exceeds `limit`. */
export function truncateMiddle(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const head = Math.floor(limit * 0.4);
  const tail = limit - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n... [${omitted} characters omitted] ...\n${text.slice(text.length - tail)}`;
}

/** Where a piece of shown text came from. */
export type TranscriptSource =
  | 'user'
  | 'assistant'
  | 'reasoning'
  | 'tool_call'
  | 'tool_result'
  | 'final_response'
  | 'other';

/** One piece of untrusted text as the judge is shown it, with its place in the subject. */
export interface TranscriptSegment {
  source: TranscriptSource;
  /** Index in the subject's messages; null for the final response. */
  messageIndex: number | null;
  /** Index of the tool call within its message (tool_call only). */
  callIndex?: number;
  /** UTF-16 offsets of `text` in the original field. */
  start: number;
  end: number;
  /** The original text of this piece (before neutralisation). */
  text: string;
  /** Shown in place of `text` (a redaction), when set. */
  replacement?: string;
}

type BlockLine = { marker: string } | { segment: TranscriptSegment };

interface TranscriptBlock {
  lines: BlockLine[];
  rendered: string;
}

/** A formatted transcript: the blocks shown, and what they were made from. */
export interface TranscriptView {
  readonly nonce: string;
  readonly blocks: readonly TranscriptBlock[];
  /** The rendered transcript (without BEGIN/END lines). */
  readonly text: string;
  /** Every piece of untrusted text the judge is shown, in order. */
  readonly segments: readonly TranscriptSegment[];
}

const DEFAULTS: Required<FormatTrajectoryOptions> = {
  maxToolResultChars: 2_000,
  maxMessageChars: 4_000,
  maxTotalChars: 24_000,
  includeReasoning: true,
};

/** Ids and names that appear in marker lines: a safe alphabet, so a marker line says only what we wrote. */
function safeLabel(value: string): string {
  const cleaned = value.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 64);
  return cleaned.length > 0 ? cleaned : '_';
}

/** The pieces of `text` the judge is shown under `limit`: all of it, or its head and tail. */
function pieces(
  text: string,
  limit: number,
  where: Omit<TranscriptSegment, 'start' | 'end' | 'text'>,
): BlockLine[] {
  if (text.length <= limit) return [{ segment: { ...where, start: 0, end: text.length, text } }];
  const head = Math.floor(limit * 0.4);
  const tailStart = text.length - (limit - head);
  return [
    { segment: { ...where, start: 0, end: head, text: text.slice(0, head) } },
    { marker: `[... ${tailStart - head} characters omitted ...]` },
    { segment: { ...where, start: tailStart, end: text.length, text: text.slice(tailStart) } },
  ];
}

function renderSegment(segment: TranscriptSegment, nonce: string): string {
  // A replacement (a redaction) holds agent text too: it is neutralised like the original.
  return quoteLines(neutraliseUntrustedText(segment.replacement ?? segment.text, { nonces: [nonce] }).text);
}

function renderLines(lines: readonly BlockLine[], nonce: string): string {
  return lines
    .map((line) => ('marker' in line ? line.marker : renderSegment(line.segment, nonce)))
    .join('\n');
}

function block(lines: BlockLine[], nonce: string): TranscriptBlock {
  return { lines, rendered: renderLines(lines, nonce) };
}

function messageBlocks(
  message: ChatMessage,
  messageIndex: number,
  options: Required<FormatTrajectoryOptions>,
  nonce: string,
): TranscriptBlock {
  const lines: BlockLine[] = [];
  const text = messageText(message);
  switch (message.role) {
    case 'tool':
      lines.push({
        marker: `[tool result${message.tool_call_id ? ` ${safeLabel(message.tool_call_id)}` : ''}]`,
      });
      lines.push(...pieces(text, options.maxToolResultChars, { source: 'tool_result', messageIndex }));
      break;
    case 'assistant': {
      const reasoning = typeof message.reasoning_content === 'string' ? message.reasoning_content : '';
      if (options.includeReasoning && reasoning.trim()) {
        lines.push({ marker: '[assistant reasoning]' });
        lines.push(...pieces(reasoning, options.maxMessageChars, { source: 'reasoning', messageIndex }));
      }
      if (text.trim()) {
        lines.push({ marker: '[assistant]' });
        lines.push(...pieces(text, options.maxMessageChars, { source: 'assistant', messageIndex }));
      }
      (message.tool_calls ?? []).forEach((call, callIndex) => {
        lines.push({ marker: `[tool call ${safeLabel(call.id)}]` });
        // The name is the agent's too (an unknown tool keeps the name it was called by).
        const shown = `${call.function.name}(${call.function.arguments})`;
        lines.push(
          ...pieces(shown, options.maxMessageChars, { source: 'tool_call', messageIndex, callIndex }),
        );
      });
      if (lines.length === 0) lines.push({ marker: '[assistant] (empty)' });
      break;
    }
    default:
      lines.push({ marker: `[${message.role === 'user' ? 'user' : safeLabel(message.role)}]` });
      lines.push(
        ...pieces(text, options.maxMessageChars, {
          source: message.role === 'user' ? 'user' : 'other',
          messageIndex,
        }),
      );
  }
  return block(lines, nonce);
}

function assemble(nonce: string, blocks: TranscriptBlock[]): TranscriptView {
  const segments: TranscriptSegment[] = [];
  for (const entry of blocks)
    for (const line of entry.lines) if ('segment' in line) segments.push(line.segment);
  return { nonce, blocks, text: blocks.map((entry) => entry.rendered).join('\n'), segments };
}

/**
 * The transcript view of a trajectory (and its final response, shown last), rendered with
 * `nonce` (which no shown piece of agent text can contain: occurrences are neutralised).
 */
export function buildTranscriptView(
  messages: readonly ChatMessage[],
  options: FormatTrajectoryOptions & { nonce: string; finalResponse?: string | null },
): TranscriptView {
  const resolved: Required<FormatTrajectoryOptions> = {
    maxToolResultChars: options.maxToolResultChars ?? DEFAULTS.maxToolResultChars,
    maxMessageChars: options.maxMessageChars ?? DEFAULTS.maxMessageChars,
    maxTotalChars: options.maxTotalChars ?? DEFAULTS.maxTotalChars,
    includeReasoning: options.includeReasoning ?? DEFAULTS.includeReasoning,
  };
  const { nonce } = options;
  // The system prompt is the environment's, not the agent's; judges see the task through the user turn.
  const shown: Array<{ message: ChatMessage; index: number }> = [];
  messages.forEach((message, index) => {
    if (message.role !== 'system') shown.push({ message, index });
  });
  // Keep the first block (the task) and as many of the last blocks as fit. Blocks are rendered
  // from the end and only until the budget is spent: the elided middle is never formatted.
  const render = (entry: { message: ChatMessage; index: number }) =>
    messageBlocks(entry.message, entry.index, resolved, nonce);
  const separator = 1;
  let kept: TranscriptBlock[] = [];
  if (shown.length > 0) {
    const first = render(shown[0]!);
    const tail: TranscriptBlock[] = [];
    let total = first.rendered.length + separator;
    let next = shown.length - 1;
    for (; next >= 1; next--) {
      const entry = render(shown[next]!);
      if (total + entry.rendered.length + separator > resolved.maxTotalChars) break;
      tail.unshift(entry);
      total += entry.rendered.length + separator;
    }
    const omitted = next;
    kept =
      omitted === 0
        ? [first, ...tail]
        : [
            first,
            block(
              [{ marker: `[... ${omitted} earlier message${omitted === 1 ? '' : 's'} omitted ...]` }],
              nonce,
            ),
            ...tail,
          ];
  }
  if (options.finalResponse) {
    kept = [
      ...kept,
      block(
        [
          { marker: '[final response]' },
          ...pieces(options.finalResponse, resolved.maxMessageChars, {
            source: 'final_response',
            messageIndex: null,
          }),
        ],
        nonce,
      ),
    ];
  }
  return assemble(nonce, kept);
}

/** The same view with some pieces shown as a replacement (a redaction); offsets stay those of the original. */
export function replaceInView(
  view: TranscriptView,
  replace: (segment: TranscriptSegment) => string | undefined,
): TranscriptView {
  const blocks = view.blocks.map((entry) => {
    let changed = false;
    const lines = entry.lines.map((line) => {
      if (!('segment' in line)) return line;
      const replacement = replace(line.segment);
      if (replacement === undefined) return line;
      changed = true;
      return { segment: { ...line.segment, replacement } };
    });
    return changed ? block(lines, view.nonce) : entry;
  });
  return assemble(view.nonce, blocks);
}

/** The BEGIN line of a transcript (or of one candidate's transcript). */
function transcriptBegin(nonce: string, label?: string): string {
  return `⟦${nonce}⟧ BEGIN UNTRUSTED TRANSCRIPT${label ? ` OF CANDIDATE ${label}` : ''}`;
}

/** The END line of a transcript (or of one candidate's transcript). */
function transcriptEnd(nonce: string, label?: string): string {
  return `⟦${nonce}⟧ END UNTRUSTED TRANSCRIPT${label ? ` OF CANDIDATE ${label}` : ''}`;
}

/** The view between its BEGIN and END lines. */
export function renderTranscript(view: TranscriptView, label?: string): string {
  return [transcriptBegin(view.nonce, label), view.text, transcriptEnd(view.nonce, label)].join('\n');
}

/**
 * A trajectory formatted for a judge prompt, between nonce-tagged BEGIN/END lines. Without a
 * `nonce` one is drawn; a judge prompt passes its own so its instructions can name it.
 */
export function formatTrajectory(
  messages: readonly ChatMessage[],
  options: FormatTrajectoryOptions & { nonce?: string; finalResponse?: string | null } = {},
): string {
  const nonce = options.nonce ?? createJudgeNonce();
  return renderTranscript(buildTranscriptView(messages, { ...options, nonce }));
}
