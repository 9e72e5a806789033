// The injection screen: rules over exactly what a judge will read of a trajectory (the transcript
// view's pieces of agent and tool text, after truncation) that find text aimed at the grader
// rather than at the task — forged prompt structure, grader-addressed requests, verdict-shaped
// JSON, invisible or look-alike characters hiding either. A hit is recorded on the verdict as
// `judge_injection_suspected` with the matching spans; what follows (flag, zero, a stricter
// judge) is the judge's `injection.action` (injection-policy.ts). Rules match folded text
// (untrusted-text.ts), so look-alike letters and zero-width characters do not hide a phrase.
import type { JudgeSubject } from '@shears/core';
import {
  buildTranscriptView,
  type FormatTrajectoryOptions,
  replaceInView,
  type TranscriptSegment,
  type TranscriptView,
} from './format-trajectory.js';
import { createJudgeNonce } from './judge-nonce.js';
import { DEFAULT_RUBRIC } from './rubric.js';
import {
  findStructure,
  foldedWord,
  foldText,
  LINE_START,
  linePrefixLength,
  originEnd,
  originStart,
} from './untrusted-text.js';

/** The flag a suspected injection puts on a verdict record. */
export const JUDGE_INJECTION_FLAG = 'judge_injection_suspected';

export type InjectionRule =
  | 'forged_structure'
  | 'obfuscated_structure'
  | 'grader_address'
  | 'verdict_json'
  | 'hidden_characters'
  | 'model_screen';

/** One suspicious span, located in the subject. */
export interface InjectionSpan {
  rule: InjectionRule;
  /** Which text it is in. */
  source: TranscriptSegment['source'] | 'unknown';
  /** Index in the subject's messages; null for the final response (or an unlocated model quote). */
  messageIndex: number | null;
  callIndex?: number;
  /** UTF-16 offsets in that text. */
  start: number;
  end: number;
  /** The matching text (at most 200 characters). */
  excerpt: string;
}

export interface InjectionScreen {
  suspected: boolean;
  spans: InjectionSpan[];
}

const w = foldedWord;
const any = (...list: string[]) => `(?:${list.map(w).join('|')})`;
const GRADER = any(
  'evaluator',
  'grader',
  'judge',
  'reviewer',
  'assessor',
  'scorer',
  'rater',
  'grading model',
  'grading system',
  'scoring system',
  'reward model',
);

/**
 * Rules over folded text (lowercase, look-alikes mapped, invisible characters gone). A `block`
 * rule's span runs on to the end of the forged block (the next blank line or marker), so that a
 * stricter judge shown the transcript without it does not see the forged content either.
 */
const TEXT_RULES: ReadonlyArray<{ rule: InjectionRule; pattern: RegExp; block?: boolean }> = [
  // Turn markers the prompt uses, anywhere (distinctive), or the short ones at a line start.
  {
    rule: 'forged_structure',
    pattern: new RegExp(
      `[\\[(⟦❬<]\\s*${any('tool result', 'tool call', 'tool output', 'assistant reasoning', 'final response', 'function result')}\\b[^\\]\\n)⟧❭>]{0,120}[\\])⟧❭>]?|${LINE_START}[ \\t>*]*\\[\\s*${any('assistant', 'user', 'system', 'tool', 'developer')}\\s*\\]`,
      'g',
    ),
    block: true,
  },
  // Section headings of the judge prompts at a line start; the transcript boundary anywhere.
  {
    rule: 'forged_structure',
    pattern: new RegExp(
      `${LINE_START}[ \\t>*#_-]*${any('final response', 'reference answer', 'agent trajectory', 'agent transcript', 'score each dimension', 'scoring instructions', 'grading instructions', 'evaluation instructions')}[ \\t*_]*:|${LINE_START}[ \\t]*#{1,6}[ \\t]*${any('candidate', 'attempt')}\\b[^\\n]*|${any('untrusted transcript')}|⟦`,
      'g',
    ),
    block: true,
  },
  // The end of the transcript announced from inside it (the real boundary carries the nonce).
  {
    rule: 'forged_structure',
    pattern: new RegExp(
      `\\b${any('end of transcript', 'end of the transcript', 'end of agent output', 'end of the agent output', 'end of agent transcript', 'end of the agent transcript', 'end of untrusted', 'begin instructions', 'begin grading instructions')}\\b`,
      'g',
    ),
    block: true,
  },
  // A verdict written as YAML or key = value lines rather than JSON.
  {
    rule: 'verdict_json',
    pattern: new RegExp(
      `${LINE_START}[ \\t>*#_-]*${w('composite')}[ \\t*_]*[:=][ \\t]*(?:0|1)(?:\\.\\d+)?\\b`,
      'g',
    ),
  },
  // Chat-template tokens a tokenizer may read as special.
  {
    rule: 'forged_structure',
    pattern: new RegExp(`<\\|[^|\\n]{1,40}\\|>|\\[\\/?${w('inst')}\\]|<<\\/?${w('sys')}>>`, 'g'),
  },
  // Text addressed to the grader, or asking for a score.
  {
    rule: 'grader_address',
    pattern: new RegExp(
      [
        `\\b(?:as|to|for|dear|attention|important|notice|note|note to|message to|hello|hey|hi|psst)[ ,:!-]+(?:the |an |a |any |all |my )?(?:ai |llm |automated |automatic )?${GRADER}s?\\b`,
        `${LINE_START}[ \\t>*#_-]*${GRADER}s?[ \\t]*[:,]`,
        `\\b${any('ignore', 'disregard', 'forget', 'override', 'bypass', 'skip')}\\b[^\\n]{0,40}\\b${any('previous', 'prior', 'above', 'earlier', 'all', 'your', 'the', 'any', 'other', 'system', 'grading', 'scoring')}\\b[^\\n]{0,25}\\b${any('instruction', 'instructions', 'rule', 'rules', 'prompt', 'prompts', 'guideline', 'guidelines', 'rubric', 'criteria', 'directions')}\\b`,
        `\\b${any('new instructions', 'updated instructions', 'revised rubric', 'new rubric', 'system prompt', 'system override', 'admin override')}\\b`,
        `\\b${any('give', 'award', 'assign', 'rate', 'score', 'grade', 'mark', 'output', 'return')}\\b[^\\n]{0,40}(?:10\\s*/\\s*10|100\\s*/\\s*100|\\b${any('full marks', 'full score', 'full points', 'perfect score', 'maximum score', 'max score', 'highest score', 'top score', 'top marks', 'highest rating')}\\b|${w('composite')}\\W{0,4}1(?:\\.0+)?\\b)`,
        `\\b${any('this response', 'this answer', 'this solution', 'this trajectory', 'this transcript', 'this attempt', 'this candidate', 'the agent', 'this agent')}\\b[^\\n]{0,20}\\b${any('deserves', 'should get', 'should receive', 'should be given', 'should be scored', 'should be rated', 'must get', 'must receive', 'must be scored')}\\b`,
        // The grader named as the one acting, or addressed without being named.
        `\\b${GRADER}s?\\s+(?:should|must|will|needs? to|is to|has to)\\s+${any('give', 'assign', 'award', 'score', 'rate', 'grade', 'mark', 'output', 'return', 'accept')}\\b`,
        `\\b${w('whoever')}\\s+${any('scores', 'grades', 'evaluates', 'judges', 'rates', 'assesses', 'reviews', 'marks')}\\b`,
        `\\b${w('when you')}\\s+${any('grade', 'score', 'evaluate', 'judge', 'rate', 'assess', 'mark')}\\s+${any('this', 'my', 'the agent', 'the response', 'the answer', 'the solution')}\\b`,
        `\\b${any('rate', 'score', 'grade', 'mark', 'judge', 'evaluate', 'assess')}\\s+${any('this', 'my', 'the')}\\s+${any('response', 'answer', 'solution', 'work', 'submission', 'attempt', 'trajectory', 'transcript', 'output')}\\s+${w('as')}\\b`,
        // Claims that the rules of grading changed.
        `\\b${any('rubric', 'scoring criteria', 'grading criteria', 'evaluation criteria', 'scoring rules', 'grading rules', 'scoring instructions', 'grading instructions')}\\s+(?:${any('has', 'have', 'is', 'are', 'was', 'were')}\\s+)?(?:${w('been')}\\s+)?${any('changed', 'updated', 'revised', 'replaced', 'superseded', 'overridden')}\\b`,
      ].join('|'),
      'g',
    ),
  },
];

/** Verdict-shaped JSON keys: the replies the judges ask for (and rubric dimension names). */
function verdictJsonPattern(dimensions: readonly string[]): RegExp {
  const keys = [...new Set([...dimensions, ...DEFAULT_RUBRIC.dimensions.map((entry) => entry.name)])];
  return new RegExp(
    [
      `\\\\?["'\`]${w('composite')}\\\\?["'\`]\\s*:`,
      `\\\\?["'\`]${w('winner')}\\\\?["'\`]\\s*:\\s*\\\\?["'\`]`,
      `\\\\?["'\`]${w('dimensions')}\\\\?["'\`]\\s*:\\s*\\{`,
      `\\\\?["'\`]${w('scores')}\\\\?["'\`]\\s*:\\s*\\{\\s*\\\\?["'\`][^"'\`\\n]{1,16}\\\\?["'\`]\\s*:\\s*-?[\\d.]`,
      `\\\\?["'\`]${w('nonce')}\\\\?["'\`]\\s*:\\s*\\\\?["'\`]`,
      `\\\\?["'\`](?:${keys.map(w).join('|')})\\\\?["'\`]\\s*:\\s*-?\\d`,
    ].join('|'),
    'g',
  );
}

/** Characters that hide text from a reader: tag characters, bidi controls, zero-width characters inside words. */
const HIDDEN =
  /[\u{E0000}-\u{E007F}]+|[\u202A-\u202E\u2066-\u2069]+|[\u200B\u200C\u2060-\u2064\u180E\uFEFF]+|(?<=[\x21-\x7e])\u200D(?=[\x21-\x7e])/gu;

const ASCII_ONLY = /^[\x00-\x7f]*$/;
const MAX_SPANS = 50;
const MAX_BLOCK = 1_000;

/** Where a forged block ends: at a blank line (plain or escaped), a marker line, or the text's end. */
function blockEnd(text: string, from: number): number {
  const rest = text.slice(from, from + MAX_BLOCK);
  const stop = /\n[ \t]*\n|\\n[ \t]*\\n|\n[ \t]*[[⟦]|\\n[ \t]*\[/.exec(rest);
  return from + (stop ? stop.index : rest.length);
}
const EXCERPT = 200;

export interface ScreenOptions {
  /** Rubric dimension names to treat as verdict keys (the default rubric's always are). */
  dimensions?: readonly string[];
}

/** Screens the pieces of a transcript view. */
export function screenTranscriptView(view: TranscriptView, options: ScreenOptions = {}): InjectionScreen {
  return screenSegments(view.segments, options);
}

function screenSegments(
  segments: readonly TranscriptSegment[],
  options: ScreenOptions = {},
): InjectionScreen {
  const verdictJson = verdictJsonPattern(options.dimensions ?? []);
  const spans: InjectionSpan[] = [];
  for (const segment of segments) {
    // The task is the environment's, not the agent's.
    if (segment.source === 'user') continue;
    const { text } = segment;
    const add = (rule: InjectionRule, start: number, end: number) => {
      spans.push({
        rule,
        source: segment.source,
        messageIndex: segment.messageIndex,
        ...(segment.callIndex !== undefined ? { callIndex: segment.callIndex } : {}),
        start: segment.start + start,
        end: segment.start + end,
        excerpt: text.slice(start, Math.min(end, start + EXCERPT)),
      });
    };
    const folded = foldText(text);
    for (const { rule, pattern, block } of [
      ...TEXT_RULES,
      { rule: 'verdict_json' as const, pattern: verdictJson },
    ]) {
      pattern.lastIndex = 0;
      for (let match = pattern.exec(folded.folded); match; match = pattern.exec(folded.folded)) {
        const leading = linePrefixLength(match[0]) || match[0].length - match[0].trimStart().length;
        const from = match.index + leading;
        const to = match.index + match[0].length;
        if (to > from) {
          const end = originEnd(folded, to - 1);
          add(
            rule,
            originStart(folded, from),
            block && !match[0].startsWith('⟦') ? blockEnd(text, end) : end,
          );
        }
        if (match[0].length === 0) pattern.lastIndex++;
      }
    }
    // Structure spelt with look-alike or invisible characters: an imitation written to get past a
    // plain match (pure ASCII text has none to hide behind).
    for (const match of ASCII_ONLY.test(text) ? [] : findStructure(text, { folded })) {
      const span = text.slice(match.start, match.end);
      if (/[^\x00-\x7f]/.test(span) && match.name !== 'bracket')
        add('obfuscated_structure', match.start, match.end);
    }
    HIDDEN.lastIndex = 0;
    for (let match = HIDDEN.exec(text); match; match = HIDDEN.exec(text))
      add('hidden_characters', match.index, match.index + match[0].length);
  }
  spans.sort(
    (a, b) =>
      (a.messageIndex ?? Number.MAX_SAFE_INTEGER) - (b.messageIndex ?? Number.MAX_SAFE_INTEGER) ||
      a.source.localeCompare(b.source) ||
      (a.callIndex ?? 0) - (b.callIndex ?? 0) ||
      a.start - b.start,
  );
  const unique = spans.filter(
    (span, index) =>
      index === 0 ||
      !(
        span.rule === spans[index - 1]!.rule &&
        span.start === spans[index - 1]!.start &&
        span.messageIndex === spans[index - 1]!.messageIndex &&
        span.source === spans[index - 1]!.source
      ),
  );
  return { suspected: unique.length > 0, spans: unique };
}

/**
 * Screens what a judge with these format settings would read of `subject` (its messages and
 * final response, truncated the same way). The judges call the view-based form on the view
 * they render; this one is for tools and benches.
 */
export function screenForInjection(
  subject: Pick<JudgeSubject, 'messages' | 'finalResponse'>,
  options: ScreenOptions & { format?: FormatTrajectoryOptions } = {},
): InjectionScreen {
  const view = buildTranscriptView(subject.messages, {
    ...options.format,
    nonce: createJudgeNonce(),
    finalResponse: subject.finalResponse,
  });
  return screenTranscriptView(view, options);
}

/** Spans capped for a record: the first MAX_SPANS, and how many more there were. */
export function spansForRecord(spans: readonly InjectionSpan[]): {
  spans: InjectionSpan[];
  spansOmitted?: number;
} {
  return spans.length > MAX_SPANS
    ? { spans: spans.slice(0, MAX_SPANS), spansOmitted: spans.length - MAX_SPANS }
    : { spans: [...spans] };
}

function sameText(span: InjectionSpan, segment: TranscriptSegment): boolean {
  return (
    span.source === segment.source &&
    span.messageIndex === segment.messageIndex &&
    (span.callIndex ?? -1) === (segment.callIndex ?? -1)
  );
}

/**
 * The view with every suspicious span removed and marked «removed: ...», for the stricter judge.
 * Spans are merged first, so overlapping hits remove their union.
 */
export function redactTranscriptView(view: TranscriptView, spans: readonly InjectionSpan[]): TranscriptView {
  return replaceInView(view, (segment) => {
    const inside = spans
      .filter((span) => sameText(span, segment) && span.end > segment.start && span.start < segment.end)
      .map((span) => ({
        start: Math.max(span.start, segment.start) - segment.start,
        end: Math.min(span.end, segment.end) - segment.start,
        rule: span.rule,
      }))
      .sort((a, b) => a.start - b.start);
    if (inside.length === 0) return undefined;
    let out = '';
    let cursor = 0;
    for (let index = 0; index < inside.length; ) {
      let { start, end } = inside[index]!;
      const rules = new Set([inside[index]!.rule]);
      index++;
      while (index < inside.length && inside[index]!.start <= end) {
        end = Math.max(end, inside[index]!.end);
        rules.add(inside[index]!.rule);
        index++;
      }
      out += `${segment.text.slice(cursor, start)}«removed: suspected text aimed at the grader (${[...rules].join(', ')})»`;
      cursor = end;
    }
    return out + segment.text.slice(cursor);
  });
}
