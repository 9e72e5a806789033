// The registry manifest of @shears/judges: judges by name, created from settings. A judge's
// `server` setting is either a ServerV1 instance or `{ provider, ...settings }` resolved
// through the registry (so any installed server package can back a judge).
import {
  definePlugin,
  definePluginEntry,
  InvalidArgumentError,
  type PluginContext,
  type ServerV1,
} from '@shears/core';
import { createGroupJudge } from './group-judge.js';
import type { InjectionSettings } from './injection-policy.js';
import type { JudgeCache } from './judge-cache.js';
import { createJudgePanel } from './judge-panel.js';
import {
  type GroupJudgeOptions,
  groupJudgeOptionsSchema,
  type InjectionOptions,
  panelOptionsSchema,
  type RubricJudgeOptions,
  resolveCacheOption,
  rubricJudgeOptionsSchema,
} from './plugin-options.js';
import { BINARY_RUBRIC, createRubric, DEFAULT_RUBRIC, type RubricOptions } from './rubric.js';
import { createRubricJudge } from './rubric-judge.js';

async function resolveServer(value: unknown, context: PluginContext, where: string): Promise<ServerV1> {
  if (value && typeof value === 'object' && typeof (value as ServerV1).chat === 'function')
    return value as ServerV1;
  if (value && typeof value === 'object' && typeof (value as { provider?: unknown }).provider === 'string') {
    const { provider, ...settings } = value as { provider: string } & Record<string, unknown>;
    return context.registry.create('servers', provider, settings);
  }
  throw new InvalidArgumentError({
    argument: `${where}.server`,
    value,
    message: `${where}.server must be a server instance or { provider: "<server id>", ... } (available providers: ${context.registry.list('servers').join(', ') || 'none registered'})`,
  });
}

/** Injection settings with their servers built (a stricter judge or screen on another model). */
async function resolveInjectionOptions(
  options: InjectionOptions | undefined,
  context: PluginContext,
  where: string,
): Promise<InjectionSettings | undefined> {
  if (!options) return undefined;
  const { strictJudge, modelScreen, action, agentAction, penaltyScore } = options;
  return {
    ...(action ? { action } : {}),
    ...(agentAction ? { agentAction } : {}),
    ...(penaltyScore !== undefined ? { penaltyScore } : {}),
    ...(strictJudge
      ? {
          strictJudge: {
            ...strictJudge,
            server:
              strictJudge.server === undefined
                ? undefined
                : await resolveServer(strictJudge.server, context, `${where}.injection.strictJudge`),
          },
        }
      : {}),
    ...(modelScreen === undefined
      ? {}
      : typeof modelScreen === 'boolean'
        ? { modelScreen }
        : {
            modelScreen: {
              ...modelScreen,
              server:
                modelScreen.server === undefined
                  ? undefined
                  : await resolveServer(modelScreen.server, context, `${where}.injection.modelScreen`),
            },
          }),
  };
}

function resolveRubric(value: unknown) {
  if (value === undefined || value === 'default') return DEFAULT_RUBRIC;
  if (value === 'binary') return BINARY_RUBRIC;
  return createRubric(value as RubricOptions);
}

async function createRubricFromSettings(
  options: RubricJudgeOptions,
  context: PluginContext,
  where: string,
  defaults: { cache?: JudgeCache; injection?: InjectionOptions } = {},
) {
  return createRubricJudge({
    id: options.id,
    server: await resolveServer(options.server, context, where),
    rubric: resolveRubric(options.rubric),
    responseFormat: options.responseFormat,
    timeoutMs: options.timeoutMs,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    format: options.format,
    cache: options.cache === undefined ? defaults.cache : resolveCacheOption(options.cache),
    pricing: options.pricing,
    extraBody: options.extraBody,
    injection: await resolveInjectionOptions(options.injection ?? defaults.injection, context, where),
  });
}

async function createGroupFromSettings(options: GroupJudgeOptions, context: PluginContext) {
  return createGroupJudge({
    id: options.id,
    server: await resolveServer(options.server, context, 'judges.group'),
    criteria: options.criteria,
    rounds: options.rounds,
    timeoutMs: options.timeoutMs,
    temperature: options.temperature,
    format: options.format,
    pricing: options.pricing,
    injection: await resolveInjectionOptions(options.injection, context, 'judges.group'),
  });
}

const plugin = definePlugin({
  id: '@shears/judges',
  description: 'Rubric judges, judge panels, group (listwise) judges',
  judges: {
    rubric: definePluginEntry({
      description: 'One LLM judge scoring a rubric (default: the five seed dimensions) with a 0-1 composite',
      settings: rubricJudgeOptionsSchema,
      create: (settings, context) => createRubricFromSettings(settings, context, 'judges.rubric'),
    }),
    panel: definePluginEntry({
      description:
        'Several rubric judges aggregated by mean, median, trimmed_mean or majority, with a quorum',
      aliases: ['jury'],
      settings: panelOptionsSchema,
      async create(settings, context) {
        const cache = resolveCacheOption(settings.cache);
        const judges = await Promise.all(
          settings.judges.map((member, index) =>
            createRubricFromSettings(member, context, `judges.panel.judges[${index}]`, {
              cache,
              injection: settings.injection,
            }),
          ),
        );
        return createJudgePanel({
          id: settings.id,
          judges,
          aggregation: settings.aggregation,
          quorum: settings.quorum,
          disagreementThreshold: settings.disagreementThreshold,
        });
      },
    }),
    group: definePluginEntry({
      description: 'Listwise judge scoring a whole GRPO group in one call, order shuffled',
      aliases: ['listwise'],
      settings: groupJudgeOptionsSchema,
      create: (settings, context) => createGroupFromSettings(settings, context),
    }),
  },
});

export default plugin;
