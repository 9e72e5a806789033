// SFT and DPO export from scored groups: chat JSONL of good rollouts for supervised fine-tuning,
// and chosen/rejected pairs (best vs worst rollout of a group) for preference training.

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import type { ScoredGroupRecord } from '@shears/core';

export interface SftRecord {
  messages: Record<string, unknown>[];
  score: number;
  task_id: string;
  group_id: string;
}

export interface SftExportOptions {
  /** Keep rollouts scoring at least this. Default: no floor. */
  minScore?: number;
  /** `all` counted rollouts passing the floor, or only the `best` of each group. Default `best`. */
  select?: 'all' | 'best';
}

const counted = (group: ScoredGroupRecord) =>
  group.rollouts
    .map((rollout, index) => ({ rollout, score: group.scores[index] }))
    .filter(
      (entry): entry is { rollout: ScoredGroupRecord['rollouts'][number]; score: number } =>
        typeof entry.score === 'number',
    );

export function toSftRecords(
  groups: Iterable<ScoredGroupRecord>,
  options: SftExportOptions = {},
): SftRecord[] {
  const out: SftRecord[] = [];
  for (const group of groups) {
    let entries = counted(group).filter(
      (entry) => options.minScore === undefined || entry.score >= options.minScore,
    );
    if ((options.select ?? 'best') === 'best' && entries.length > 0) {
      const best = entries.reduce((top, entry) => (entry.score > top.score ? entry : top));
      entries = [best];
    }
    for (const { rollout, score } of entries) {
      out.push({
        messages: rollout.messages as Record<string, unknown>[],
        score,
        task_id: group.taskId,
        group_id: group.groupId,
      });
    }
  }
  return out;
}

export interface DpoPair {
  /** The shared conversation up to the first assistant turn. */
  prompt: Record<string, unknown>[];
  chosen: Record<string, unknown>[];
  rejected: Record<string, unknown>[];
  score_chosen: number;
  score_rejected: number;
  task_id: string;
  group_id: string;
}

export interface DpoExportOptions {
  /** Smallest chosen − rejected score difference worth a pair. Default: any positive difference. */
  minMargin?: number;
  /** `best-worst` (one pair per group, default) or `all` pairs whose margin qualifies. */
  pairs?: 'best-worst' | 'all';
}

function splitPrompt(
  messages: Record<string, unknown>[],
): [Record<string, unknown>[], Record<string, unknown>[]] {
  const first = messages.findIndex((message) => message.role === 'assistant');
  return first < 0 ? [messages, []] : [messages.slice(0, first), messages.slice(first)];
}

export function toDpoPairs(groups: Iterable<ScoredGroupRecord>, options: DpoExportOptions = {}): DpoPair[] {
  const out: DpoPair[] = [];
  const margin = options.minMargin ?? 0;
  for (const group of groups) {
    const entries = counted(group).sort((a, b) => b.score - a.score);
    if (entries.length < 2) continue;
    const candidates: [(typeof entries)[number], (typeof entries)[number]][] = [];
    if ((options.pairs ?? 'best-worst') === 'best-worst')
      candidates.push([
        entries[0] as (typeof entries)[number],
        entries[entries.length - 1] as (typeof entries)[number],
      ]);
    else
      for (let i = 0; i < entries.length; i++)
        for (let j = i + 1; j < entries.length; j++)
          candidates.push([entries[i] as (typeof entries)[number], entries[j] as (typeof entries)[number]]);
    for (const [chosen, rejected] of candidates) {
      const difference = chosen.score - rejected.score;
      if (!(difference > 0) || difference < margin) continue;
      const [prompt, chosenTurns] = splitPrompt(chosen.rollout.messages as Record<string, unknown>[]);
      const [, rejectedTurns] = splitPrompt(rejected.rollout.messages as Record<string, unknown>[]);
      out.push({
        prompt,
        chosen: chosenTurns,
        rejected: rejectedTurns,
        score_chosen: chosen.score,
        score_rejected: rejected.score,
        task_id: group.taskId,
        group_id: group.groupId,
      });
    }
  }
  return out;
}

/** Writes records as JSON Lines. */
export async function writeJsonl(path: string, records: Iterable<unknown>): Promise<number> {
  const stream = createWriteStream(path, { encoding: 'utf8' });
  let count = 0;
  for (const record of records) {
    if (!stream.write(`${JSON.stringify(record)}\n`)) await once(stream, 'drain');
    count++;
  }
  stream.end();
  await once(stream, 'finish');
  return count;
}
