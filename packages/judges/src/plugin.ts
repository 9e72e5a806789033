// The registry manifest of @shears/judges: judges by name, created from settings. A judge's
// `server` setting is either a ServerV1 instance or `{ provider, ...settings }` resolved
// through the registry (so any installed server package can back a judge).
import { definePlugin, InvalidArgumentError, type PluginContext, type ServerV1 } from '@shears/core';
import type { AggregationMethod } from './aggregate.js';
import { createGroupJudge } from './group-judge.js';
import { createJudgePanel } from './judge-panel.js';
import { BINARY_RUBRIC, createRubric, DEFAULT_RUBRIC, type RubricOptions } from './rubric.js';
import { createRubricJudge, type ResponseFormatMode } from './rubric-judge.js';

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

function resolveRubric(value: unknown) {
  if (value === undefined || value === 'default') return DEFAULT_RUBRIC;
  if (value === 'binary') return BINARY_RUBRIC;
  return createRubric(value as RubricOptions);
}

async function createRubricFromSettings(
  settings: Record<string, unknown>,
  context: PluginContext,
  where: string,
) {
  return createRubricJudge({
    id: settings.id as string | undefined,
    server: await resolveServer(settings.server, context, where),
    rubric: resolveRubric(settings.rubric),
    responseFormat: settings.responseFormat as ResponseFormatMode | undefined,
    timeoutMs: settings.timeoutMs as number | undefined,
    temperature: settings.temperature as number | undefined,
    extraBody: settings.extraBody as Record<string, unknown> | undefined,
  });
}

const plugin = definePlugin({
  id: '@shears/judges',
  description: 'Rubric judges, judge panels, group (listwise) judges',
  judges: {
    rubric: {
      description: 'One LLM judge scoring a rubric (default: the five seed dimensions) with a 0-1 composite',
      create: (settings, context) => createRubricFromSettings(settings, context, 'judges.rubric'),
    },
    panel: {
      description:
        'Several rubric judges aggregated by mean, median, trimmed_mean or majority, with a quorum',
      aliases: ['jury'],
      async create(settings, context) {
        const members = settings.judges;
        if (!Array.isArray(members) || members.length === 0) {
          throw new InvalidArgumentError({
            argument: 'judges.panel.judges',
            value: members,
            message: 'judges.panel.judges must be a non-empty list of rubric judge settings',
          });
        }
        const judges = await Promise.all(
          members.map((member, index) =>
            createRubricFromSettings(
              member as Record<string, unknown>,
              context,
              `judges.panel.judges[${index}]`,
            ),
          ),
        );
        return createJudgePanel({
          id: settings.id as string | undefined,
          judges,
          aggregation: settings.aggregation as AggregationMethod | undefined,
          quorum: settings.quorum as number | undefined,
          disagreementThreshold: settings.disagreementThreshold as number | undefined,
        });
      },
    },
    group: {
      description: 'Listwise judge scoring a whole GRPO group in one call, order shuffled',
      aliases: ['listwise'],
      async create(settings, context) {
        return createGroupJudge({
          id: settings.id as string | undefined,
          server: await resolveServer(settings.server, context, 'judges.group'),
          criteria: settings.criteria as string | undefined,
          rounds: settings.rounds as number | undefined,
          timeoutMs: settings.timeoutMs as number | undefined,
        });
      },
    },
  },
});

export default plugin;
