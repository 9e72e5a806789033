import { describe, expect, it } from 'vitest';
import { createDemoPolicy, pickPlan } from './demo-policy.js';
import { DEMO_TASKS } from './demo-tasks.js';

const task = DEMO_TASKS.find((entry) => entry.id === 'count-lines')!;
const prompt = [
  { role: 'system', content: 'system' },
  { role: 'user', content: task.prompt },
];

describe('demo policy', () => {
  it('picks every kind of plan across attempts, deterministically per seed', () => {
    const plans = Array.from({ length: 200 }, (_, attempt) => pickPlan(0, 'count-lines', attempt));
    expect(new Set(plans)).toEqual(new Set(['solve', 'explore', 'typo', 'mistake', 'give_up']));
    expect(Array.from({ length: 200 }, (_, attempt) => pickPlan(0, 'count-lines', attempt))).toEqual(plans);
    expect(Array.from({ length: 200 }, (_, attempt) => pickPlan(1, 'count-lines', attempt))).not.toEqual(
      plans,
    );
  });

  it('follows its plan across turns using the tool output (count the lines, then write the number)', () => {
    const solveSeed = Array.from({ length: 50 }, (_, seed) => seed).find(
      (seed) => pickPlan(seed, 'count-lines', 0) === 'solve',
    )!;
    const policy = createDemoPolicy({ seed: solveSeed });
    const first = policy({ messages: prompt });
    expect('toolCalls' in first && first.toolCalls?.[0]).toMatchObject({
      name: 'terminal',
      arguments: { command: 'wc -l < data.txt' },
    });
    const id = ('toolCalls' in first && first.toolCalls?.[0]?.id) || '';
    const second = policy({
      messages: [
        ...prompt,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id, type: 'function', function: { name: 'terminal', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: id, content: '{"output": "7\\n", "exit_code": 0, "error": null}' },
      ],
    });
    expect('toolCalls' in second && second.toolCalls?.[0]?.arguments).toEqual({
      command: 'echo 7 > answer.txt',
    });
  });

  it('answers plainly for prompts that are not demo tasks', () => {
    const reply = createDemoPolicy()({ messages: [{ role: 'user', content: 'write a poem' }] });
    expect(reply).toMatchObject({ content: expect.stringContaining('only know the shears demo tasks') });
  });
});
