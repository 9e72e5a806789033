// The worker's /metrics endpoint (prom-client, a real HTTP server on loopback) exports the
// improvement loop's rows: evaluations during training and loop events, and counts replayed groups
// apart from fresh ones. The real-Prometheus scrape of a running `serve` is prometheus.e2e.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { successRule } from '../stats.js';
import { createSyntheticGroups } from '../viewer/synthetic-groups.js';
import { type PrometheusEndpoint, startPrometheusEndpoint } from './prometheus-metrics.js';

/** `name{labels} value` lines of the exposition text, labels in written order. */
async function scrape(endpoint: PrometheusEndpoint): Promise<Map<string, number>> {
  const response = await fetch(endpoint.url);
  expect(response.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe('worker /metrics: evaluations and loop events', () => {
  let endpoint: PrometheusEndpoint | undefined;
  afterEach(async () => {
    await endpoint?.stop();
    endpoint = undefined;
  });

  it('exports the latest evaluation per env: pass@k, mean score and their intervals, step, completeness', async () => {
    endpoint = await startPrometheusEndpoint({
      host: '127.0.0.1',
      port: 0,
      command: 'train',
      success: successRule(undefined),
    });
    const base = {
      kind: 'shears.metrics.eval' as const,
      env: 'held-out',
      k: 4,
      tasks: 12,
      seconds: 3,
    };
    endpoint.event({
      ...base,
      step: 10,
      passAtK: { 'pass@1': 0.25, 'pass@2': 0.4, 'pass@4': 0.6 },
      meanScore: { mean: 0.31, low: 0.2, high: 0.42, confidence: 0.95 },
      passAt1Interval: { mean: 0.25, low: 0.1, high: 0.4 },
      complete: true,
      missing: 0,
    });
    let samples = await scrape(endpoint);
    expect(samples.get('shears_worker_eval_pass_at_k{env="held-out",k="1",command="train"}')).toBe(0.25);
    expect(samples.get('shears_worker_eval_pass_at_k{env="held-out",k="4",command="train"}')).toBe(0.6);
    expect(samples.get('shears_worker_eval_mean_score{env="held-out",command="train"}')).toBe(0.31);
    expect(
      samples.get('shears_worker_eval_mean_score_interval{env="held-out",bound="low",command="train"}'),
    ).toBe(0.2);
    expect(
      samples.get('shears_worker_eval_mean_score_interval{env="held-out",bound="high",command="train"}'),
    ).toBe(0.42);
    expect(
      samples.get('shears_worker_eval_pass_at_1_interval{env="held-out",bound="low",command="train"}'),
    ).toBe(0.1);
    expect(samples.get('shears_worker_eval_step{env="held-out",command="train"}')).toBe(10);
    expect(samples.get('shears_worker_eval_complete{env="held-out",command="train"}')).toBe(1);
    expect(
      samples.get('shears_worker_evaluations_total{env="held-out",complete="true",command="train"}'),
    ).toBe(1);

    // A later, incomplete evaluation without pass@4 and without intervals: nothing of the older one stays.
    endpoint.event({
      ...base,
      step: 20,
      passAtK: { 'pass@1': 0.5, 'pass@2': 0.7 },
      meanScore: { mean: 0.55, low: null, high: null, confidence: 0.95 },
      passAt1Interval: null,
      complete: false,
      missing: 3,
    });
    samples = await scrape(endpoint);
    expect(samples.get('shears_worker_eval_pass_at_k{env="held-out",k="1",command="train"}')).toBe(0.5);
    expect(samples.has('shears_worker_eval_pass_at_k{env="held-out",k="4",command="train"}')).toBe(false);
    expect(
      samples.has('shears_worker_eval_mean_score_interval{env="held-out",bound="low",command="train"}'),
    ).toBe(false);
    expect(
      samples.has('shears_worker_eval_pass_at_1_interval{env="held-out",bound="high",command="train"}'),
    ).toBe(false);
    expect(samples.get('shears_worker_eval_step{env="held-out",command="train"}')).toBe(20);
    expect(samples.get('shears_worker_eval_complete{env="held-out",command="train"}')).toBe(0);
    expect(
      samples.get('shears_worker_evaluations_total{env="held-out",complete="false",command="train"}'),
    ).toBe(1);
  });

  it('exports loop events: curriculum level, safety shift and recovery with the mix, replayed and capability groups', async () => {
    endpoint = await startPrometheusEndpoint({
      host: '127.0.0.1',
      port: 0,
      command: 'serve',
      success: successRule(undefined),
    });
    const [fresh, replay, capability] = createSyntheticGroups(3, { groupSize: 2, withTokens: false });
    endpoint.group(fresh!, { loop: { source: 'train', curriculumLevel: 1 } });
    endpoint.group(replay!, { loop: { replayOf: fresh!.groupId, curriculumLevel: 1 } });
    endpoint.group(capability!, { loop: { source: 'capability', curriculumLevel: 1 } });
    let samples = await scrape(endpoint);
    expect(samples.get('shears_worker_groups_total{worker="",command="serve"}')).toBe(2);
    expect(samples.get('shears_worker_replayed_groups_total{worker="",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_capability_groups_total{worker="",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_curriculum_level{command="serve"}')).toBe(1);

    endpoint.event({
      kind: 'shears.metrics.loop',
      event: 'curriculum_advanced',
      step: 4,
      from: 1,
      to: 2,
      mean: 0.8,
    });
    endpoint.event({
      kind: 'shears.metrics.loop',
      event: 'safety_regressed',
      step: 6,
      score: 0.4,
      baseline: 0.8,
      tolerance: 0.95,
      weights: { train: 0.5, capability: 0.5 },
    });
    samples = await scrape(endpoint);
    expect(samples.get('shears_worker_curriculum_level{command="serve"}')).toBe(2);
    expect(samples.get('shears_worker_curriculum_level_info{level="2",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_curriculum_level_info{level="1",command="serve"}')).toBe(0);
    expect(samples.get('shears_worker_loop_events_total{event="curriculum_advanced",command="serve"}')).toBe(
      1,
    );
    expect(samples.get('shears_worker_loop_events_total{event="safety_regressed",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_safety_regressed{command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_safety_score{command="serve"}')).toBe(0.4);
    expect(samples.get('shears_worker_safety_baseline{command="serve"}')).toBe(0.8);
    expect(samples.get('shears_worker_safety_tolerance{command="serve"}')).toBe(0.95);
    expect(samples.get('shears_worker_data_mix_weight{source="capability",command="serve"}')).toBe(0.5);

    endpoint.event({
      kind: 'shears.metrics.loop',
      event: 'safety_recovered',
      step: 9,
      score: 0.79,
      baseline: 0.8,
      tolerance: 0.95,
      weights: { train: 1, capability: 0 },
    });
    endpoint.event({
      kind: 'shears.metrics.loop',
      event: 'curriculum_fell_back',
      step: 10,
      from: 2,
      to: 'easy',
      mean: 0.1,
    });
    samples = await scrape(endpoint);
    expect(samples.get('shears_worker_safety_regressed{command="serve"}')).toBe(0);
    expect(samples.get('shears_worker_data_mix_weight{source="capability",command="serve"}')).toBe(0);
    expect(samples.get('shears_worker_loop_events_total{event="safety_recovered",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_curriculum_level_info{level="easy",command="serve"}')).toBe(1);
    expect(samples.get('shears_worker_curriculum_level_info{level="2",command="serve"}')).toBe(0);
  });
});
