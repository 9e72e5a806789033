// The pieces of W&B logging that need no server: how a metrics row becomes a history row, how a
// conversation is cut for the rollouts table, and what `shears doctor` says about a wandb section.
import { describe, expect, it } from 'vitest';
import { shearsConfigSchema } from '../config/config-schema.js';
import { checkWandbConfig } from '../plan/wandb-plan.js';
import type { MetricsRow } from './metrics-schema.js';
import { conversationText, wandbCheck, wandbHistoryRow } from './wandb.js';

const config = (wandb?: Record<string, unknown>) => shearsConfigSchema.parse(wandb ? { wandb } : {});

describe('wandbHistoryRow', () => {
  it('puts each field under its row kind, joins nested fields with dots, leaves nulls out, and adds the x axes', () => {
    const row = {
      kind: 'shears.metrics.step',
      version: 1,
      at: '2026-11-28T00:00:00.000Z',
      elapsedSeconds: 12.5,
      command: 'train',
      step: 7,
      previousStep: null,
      reward: { count: 2, mean: 0.5, std: 0.5, min: 0, max: 1 },
      passRate: null,
      tools: { terminal: { calls: 3, errors: 1, errorRate: 1 / 3, meanLatencyMs: null } },
      outcomes: { scored: 2 },
    } as unknown as MetricsRow;
    expect(wandbHistoryRow(row, { groups: 9, trainerStep: 7 })).toEqual({
      'step/elapsedSeconds': 12.5,
      'step/step': 7,
      'step/reward.count': 2,
      'step/reward.mean': 0.5,
      'step/reward.std': 0.5,
      'step/reward.min': 0,
      'step/reward.max': 1,
      'step/tools.terminal.calls': 3,
      'step/tools.terminal.errors': 1,
      'step/tools.terminal.errorRate': 1 / 3,
      'step/outcomes.scored': 2,
      groups: 9,
      trainer_step: 7,
    });
  });
});

describe('conversationText', () => {
  const messages = [
    { role: 'user', content: 'count the lines' },
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ function: { name: 'terminal', arguments: '{"command":"wc -l f"}' } }],
    },
    { role: 'tool', content: '3 f' },
  ];
  it('writes role: content per message, tool calls included', () => {
    const text = conversationText(messages, 10_000);
    expect(text).toBe(
      'user: count the lines\n\nassistant:  [tool calls: [{"function":{"name":"terminal","arguments":"{\\"command\\":\\"wc -l f\\"}"}}]]\n\ntool: 3 f',
    );
  });
  it('cuts at max_chars and says how much was left out', () => {
    const whole = conversationText(messages, 10_000);
    const cut = conversationText(messages, 20);
    expect(cut).toBe(
      `${whole.slice(0, 20)}\n… [truncated: ${whole.length - 20} of ${whole.length} characters left out]`,
    );
  });
});

describe('the wandb section before a run and in shears doctor', () => {
  it('refuses a key in the config file without printing it', () => {
    expect(() =>
      checkWandbConfig(config({ project: 'p', api_key: 'sekret-value' }), { WANDB_API_KEY: 'k' }),
    ).toThrow(/wandb.api_key: the W&B key is read only from the WANDB_API_KEY environment variable/);
    try {
      checkWandbConfig(config({ project: 'p', api_key: 'sekret-value' }), {});
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('sekret-value');
    }
  });
  it('doctor: fails without WANDB_API_KEY, warns when disabled, names the package version when ready', () => {
    const wandb = config({ project: 'p' });
    expect(wandbCheck(wandb, {})).toMatchObject({
      name: 'wandb',
      status: 'fail',
      detail: expect.stringContaining('WANDB_API_KEY is not set'),
    });
    expect(wandbCheck(wandb, { WANDB_MODE: 'disabled' })).toMatchObject({ status: 'warn' });
    expect(wandbCheck(wandb, { WANDB_MODE: 'offline', WANDB_API_KEY: 'k' })).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('no offline mode'),
    });
    expect(wandbCheck(wandb, { WANDB_API_KEY: 'k' })).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(
        /^@wandb\/sdk 0\.5\.1, WANDB_API_KEY set, project p at https:\/\/api\.wandb\.ai \(not contacted\)$/,
      ),
    });
  });
  it('no wandb section: nothing is asked of the environment', () => {
    expect(() => checkWandbConfig(config(), {})).not.toThrow();
  });
});
