// `judge` and `group_judge` created through the registry (the @shears/judges plugin registers
// rubric, panel/jury and group/listwise), each with the model server its section names; and the
// env with the judge in its reward step. A per-rollout judge under `group_judge`, or a group
// judge under `judge`, is a config error naming the field.
import {
  ConfigError,
  type EnvItem,
  type EnvV1,
  type GroupJudgeV1,
  InvalidArgumentError,
  InvalidSettingsError,
  type JudgeV1,
  type RewardResult,
  type ServerV1,
  ShearsError,
} from '@shears/core';
import { describeValue, valueAtPath } from '@shears/core/internal';
import { judgeReward } from '@shears/judges';
import type { ShearsConfig } from '../config/config-schema.js';
import { type RunRegistry, settingsConfigError } from './registry.js';

/** `judge` and `group_judge`, as the config gives them. */
type JudgesConfig = Pick<ShearsConfig, 'judge' | 'group_judge'>;

/** What judges are created through: the registry (which servers it has) and its `create`. */
type JudgeRegistry = Pick<RunRegistry, 'registry' | 'create'>;

interface ConfiguredJudges {
  /** `judge`: scores every rollout in its reward step. */
  judge?: { judge: JudgeV1; weight: number };
  /** `group_judge`: scores a group's rollouts together, passed to runGroup. */
  groupJudge?: { judge: GroupJudgeV1; weight: number };
  /** The judges' model servers, closed with the run. */
  servers: ServerV1[];
}

type JudgeSection = 'judge' | 'group_judge';

/** Settings of the judge factory, with `<section>.server` built and given as the judge's server. */
async function judgeSettings(
  run: JudgeRegistry,
  config: JudgesConfig,
  section: JudgeSection,
  servers: ServerV1[],
): Promise<Record<string, unknown>> {
  const { server, settings } = config[section]!;
  if (!server) return settings;
  if (settings.server !== undefined) {
    throw new ConfigError({
      message: `${section}.settings.server: the judge's server is already given by ${section}.server; set one of them`,
      issues: [{ path: `${section}.settings.server`, message: 'set twice', value: settings.server }],
    });
  }
  if (!server.base_url && server.provider !== 'scripted' && run.registry.has('servers', server.provider)) {
    throw new ConfigError({
      message: `${section}.server.base_url: required for ${section}.server.provider "${server.provider}" (e.g. https://api.openai.com/v1)`,
      issues: [{ path: `${section}.server.base_url`, message: 'required', value: undefined }],
    });
  }
  const instance = await run
    .create('servers', server.provider, `${section}.server.provider`, {
      ...(server.base_url ? { baseUrl: server.base_url } : {}),
      model: server.model,
      ...(server.api_key ? { apiKey: server.api_key } : {}),
      ...(server.timeout_ms ? { timeoutMs: server.timeout_ms } : {}),
      ...server.settings,
    })
    .catch((cause: unknown) => {
      if (ConfigError.isInstance(cause)) throw cause;
      throw new ConfigError({
        message: `${section}.server: ${(cause as Error).message}`,
        issues: [
          { path: `${section}.server`, message: 'server could not be created', value: server.provider },
        ],
        cause,
      });
    });
  servers.push(instance);
  // A panel's members that name no server of their own use this one.
  if (Array.isArray(settings.judges)) {
    return {
      ...settings,
      judges: settings.judges.map((member) =>
        member && typeof member === 'object' && !Array.isArray(member) && !('server' in member)
          ? { ...member, server: instance }
          : member,
      ),
    };
  }
  return { ...settings, server: instance };
}

async function createJudge(
  run: JudgeRegistry,
  config: JudgesConfig,
  section: JudgeSection,
  servers: ServerV1[],
): Promise<JudgeV1 | GroupJudgeV1> {
  const { id } = config[section]!;
  const settings = await judgeSettings(run, config, section, servers);
  try {
    return await run.create('judges', id, `${section}.id`, settings);
  } catch (cause) {
    if (ConfigError.isInstance(cause)) throw cause;
    if (InvalidSettingsError.isInstance(cause)) throw settingsConfigError(cause, `${section}.settings`);
    if (InvalidArgumentError.isInstance(cause) || ShearsError.isInstance(cause)) {
      // The judges plugin names a setting as `judges.<id>.<setting>`; in the config it is `<section>.settings.<setting>`.
      let message = cause.message.replace(/\bjudges\.(?:rubric|panel|group)\b/g, `${section}.settings`);
      if (!config[section]!.server && /settings(?:\.judges\[\d+\])?\.server\b/.test(message))
        message += `; or give the judge's model server as ${section}.server: { provider, base_url, model }`;
      const field = InvalidArgumentError.isInstance(cause)
        ? cause.argument.replace(/^judges\.(?:rubric|panel|group)\b/, `${section}.settings`)
        : `${section}.settings`;
      // Name the value of the setting the error is about.
      const parts = field
        .slice(`${section}.settings.`.length)
        .split(/\.|\[(\d+)\]/)
        .filter((part) => part !== undefined && part !== '');
      const value = field.startsWith(`${section}.settings.`)
        ? valueAtPath(config[section]!.settings, parts)
        : undefined;
      if (value !== undefined && !field.endsWith('.server') && !message.includes('; '))
        message += ` (got ${describeValue(value, parts)})`;
      throw new ConfigError({
        message: message.includes(`${section}.settings`) ? message : `${section}.settings: ${message}`,
        issues: [{ path: field, message: 'invalid judge settings', value }],
        cause,
      });
    }
    throw cause;
  }
}

/**
 * `judge` and `group_judge`, created through the registry (the @shears/judges plugin registers
 * rubric, panel/jury and group/listwise). A per-rollout judge under `group_judge`, or a group
 * judge under `judge`, is a config error naming the field.
 */
export async function createJudges(run: JudgeRegistry, config: JudgesConfig): Promise<ConfiguredJudges> {
  const servers: ServerV1[] = [];
  const configured: ConfiguredJudges = { servers };
  try {
    if (config.judge) {
      const judge = await createJudge(run, config, 'judge', servers);
      if (typeof (judge as JudgeV1).judge !== 'function') {
        throw new ConfigError({
          message: `judge.id: "${config.judge.id}" is a group judge (it scores a whole group at once); put it under group_judge`,
          issues: [{ path: 'judge.id', message: 'not a per-rollout judge', value: config.judge.id }],
        });
      }
      configured.judge = { judge: judge as JudgeV1, weight: config.judge.weight };
    }
    if (config.group_judge) {
      const judge = await createJudge(run, config, 'group_judge', servers);
      if (typeof (judge as GroupJudgeV1).judgeGroup !== 'function') {
        throw new ConfigError({
          message: `group_judge.id: "${config.group_judge.id}" scores one rollout at a time; put it under judge (group judges: group, listwise)`,
          issues: [{ path: 'group_judge.id', message: 'not a group judge', value: config.group_judge.id }],
        });
      }
      configured.groupJudge = { judge: judge as GroupJudgeV1, weight: config.group_judge.weight };
    }
    return configured;
  } catch (error) {
    await Promise.all(servers.map((server) => Promise.resolve(server.close?.()).catch(() => undefined)));
    throw error;
  }
}

/**
 * The env with `judge` in its reward step: the env's reward and the verdict are computed
 * together and blended, `(1 - weight) × env reward + weight × judge score` (components
 * `env_reward` and `judge`, next to the env's own). The verdict joins `details.verdicts`; a failed
 * verdict throws a JudgeError, so the rollout is a judge failure, retried and never counted as 0.
 */
export function withJudge<TItem extends EnvItem>(
  env: EnvV1<TItem>,
  judge: JudgeV1,
  weight: number,
): EnvV1<TItem> {
  const own = new WeakMap<object, RewardResult>();
  const ownMs = new WeakMap<object, number>();
  const reward = judgeReward<TItem>(judge, {
    name: 'judge',
    weight,
    rewards: [
      {
        name: 'env_reward',
        weight: 1 - weight,
        async fn({ item, rollout, context }) {
          const started = performance.now();
          const result = await env.computeReward(item, rollout, context);
          ownMs.set(context, performance.now() - started);
          own.set(context, result);
          return result.score;
        },
      },
    ],
  });
  const computeReward: EnvV1<TItem>['computeReward'] = async (item, rollout, context) => {
    const started = performance.now();
    const judged = await reward(item, rollout, context);
    // The judge's share of the reward time (the run metrics' latency split): the whole reward
    // less the env's own verifier, which judgeReward runs before the judge.
    const judgeMs = Math.max(0, performance.now() - started - (ownMs.get(context) ?? 0));
    const envResult = own.get(context);
    const envVerdicts = envResult?.details?.verdicts;
    return {
      score: judged.score,
      components: { ...envResult?.components, ...judged.components },
      details: {
        ...envResult?.details,
        verdicts: [
          ...(Array.isArray(envVerdicts) ? envVerdicts : []),
          ...((judged.details?.verdicts as unknown[] | undefined) ?? []),
        ],
        judgeMs,
      },
    };
  };
  // Everything else (and any extras the CLI reads, like demoPolicy) is the env's own.
  return new Proxy(env, {
    get(target, key) {
      if (key === 'computeReward') return computeReward;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
