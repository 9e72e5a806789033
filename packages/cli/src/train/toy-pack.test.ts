// The toy env's scripted demonstrator (examples/toy-pack), whose rollouts are the learning test's
// SFT warm-up: always right by default, and with `demo_decoy_rate` a demonstrator with a bug that
// saves the decoy word in that share of its calls (the whole-chain learning test's second stage).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const packPath = join(import.meta.dirname, '..', '..', '..', '..', 'examples', 'toy-pack', 'src', 'index.js');

type ToyEnv = {
  nextItem(): Promise<{ prompt: string; word: string }>;
  demoPolicy(): (request: { messages: { role: string; content: string }[] }) => {
    toolCalls?: { name: string; arguments: { word: string } }[];
    content?: string;
  };
};
type ToyPack = { createToyEnv(settings?: Record<string, unknown>): ToyEnv; DECOY_WORD: string };

async function savedWords(settings: Record<string, unknown>, count: number) {
  const pack = (await import(packPath)) as ToyPack;
  const env = pack.createToyEnv(settings);
  const policy = env.demoPolicy();
  const out: { word: string; saved: string }[] = [];
  for (let index = 0; index < count; index++) {
    const item = await env.nextItem();
    const answer = policy({ messages: [{ role: 'user', content: item.prompt }] });
    out.push({ word: item.word, saved: answer.toolCalls?.[0]?.arguments.word ?? '' });
  }
  return { out, decoy: pack.DECOY_WORD };
}

describe('the toy env demonstrator', () => {
  it('saves the prompt word every time by default', async () => {
    const { out } = await savedWords({ seed: 3 }, 200);
    expect(out.every(({ word, saved }) => word === saved)).toBe(true);
  });

  it('saves the decoy in about demo_decoy_rate of its calls, and the prompt word otherwise', async () => {
    const { out, decoy } = await savedWords({ seed: 3, demo_decoy_rate: 0.5 }, 400);
    const wrong = out.filter(({ word, saved }) => saved !== word);
    expect(wrong.every(({ saved }) => saved === decoy)).toBe(true);
    const decoys = out.filter(({ saved }) => saved === decoy).length;
    // 400 draws at 0.5 (plus the prompts whose word is the decoy itself): well inside 0.4–0.62.
    expect(decoys / out.length).toBeGreaterThan(0.4);
    expect(decoys / out.length).toBeLessThan(0.62);
  });

  it('refuses a rate outside 0–1, naming the setting', async () => {
    const pack = (await import(packPath)) as ToyPack;
    expect(() => pack.createToyEnv({ demo_decoy_rate: 1.5 })).toThrow(/demo_decoy_rate/);
  });
});
