// A third-party env pack in plain JavaScript for end-to-end tests of how runs end: its reward can
// succeed, sleep (adding a line to a marker file first), throw (a bug in the env; every time, or
// only the first time) or return NaN, and its
// tasks can come from a file the test edits between runs. Loaded by path with --plugins.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SOURCE = `import { appendFileSync, readFileSync } from 'node:fs';

function rewardFailsHere(item) {
  // A bug in the env: reads a field the item does not have.
  return item.missing.field;
}

export default {
  specificationVersion: 'v1',
  id: 'probe-pack',
  envs: {
    probe: {
      create: (settings) => {
        const tasks = settings.tasksFile
          ? JSON.parse(readFileSync(settings.tasksFile, 'utf8'))
          : Array.from({ length: settings.tasks ?? 2 }, (_, index) => ({ id: 'q' + index, prompt: 'Question ' + index + ': say right.' }));
        let cursor = 0;
        let rewardsComputed = 0;
        return {
          specificationVersion: 'v1',
          id: 'probe',
          preferredSandbox: 'local',
          async demoPolicy() {
            return (request) => ({ content: settings.answer ?? 'the right answer' });
          },
          async nextItem() {
            const task = tasks[cursor % tasks.length];
            cursor++;
            return task ? { ...task } : null;
          },
          async evalItems() {
            return tasks.map((task) => ({ ...task }));
          },
          buildMessages(item) {
            return [
              { role: 'system', content: settings.systemPrompt ?? 'You are a careful shell assistant.' },
              { role: 'user', content: item.prompt },
            ];
          },
          tools() {
            return [];
          },
          async computeReward(item, rollout) {
            if (settings.marker) appendFileSync(settings.marker, 'reward started\\n');
            if (settings.rewardMs) await new Promise((resolve) => setTimeout(resolve, settings.rewardMs));
            if (settings.reward === 'throw') return rewardFailsHere(item);
            // Only the run's first reward fails: that rollout is left out of its group.
            if (settings.reward === 'throw-first' && rewardsComputed++ === 0) return rewardFailsHere(item);
            if (settings.reward === 'nan') return { score: Number.NaN };
            const right = String(rollout.finalResponse ?? '').includes('right');
            return {
              score: right ? (settings.score ?? 1) : 0,
              ...(settings.success === undefined ? {} : { success: right && settings.success }),
            };
          },
        };
      },
    },
  },
};
`;

/** Writes the pack into `dir` and returns its path (for `--plugins '["<path>"]'`). */
export function writeProbePack(dir: string): string {
  const path = join(dir, 'probe-pack.mjs');
  writeFileSync(path, SOURCE);
  return path;
}
