import { createRegistry, definePlugin, NoSuchEntryError } from '@shears/core';
import { createScriptedServer, createScriptedServerClient } from '@shears/core/test';
import { describe, expect, it } from 'vitest';
import plugin from './index.js';

describe('@shears/judges manifest', () => {
  it('creates a panel from settings through the registry, servers named by provider', async () => {
    const server = await createScriptedServer({
      policy: (request) => ({
        content: JSON.stringify({
          dimensions: { solved: request.model === 'b' ? 0 : 1 },
          composite: request.model === 'b' ? 0 : 1,
          rationale: 'r',
        }),
      }),
    });
    try {
      const registry = createRegistry()
        .use(plugin)
        .use(
          definePlugin({
            id: 'test-servers',
            servers: {
              scripted: {
                create: (settings) =>
                  createScriptedServerClient({ baseUrl: server.url, model: String(settings.model) }),
              },
            },
          }),
        );
      expect(registry.list('judges')).toEqual(['group', 'panel', 'rubric']);
      const panel = await registry.create('judges', 'jury', {
        aggregation: 'majority',
        judges: ['a', 'b', 'c'].map((model) => ({
          id: model,
          rubric: 'binary',
          server: { provider: 'scripted', model },
        })),
      });
      const verdict = await (panel as import('@shears/core').JudgeV1).judge({
        taskId: 't',
        task: 'x',
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(verdict).toMatchObject({ status: 'scored', score: 1 });
      await expect(registry.create('judges', 'rubric', { server: { provider: 'nope' } })).rejects.toThrow(
        'No server "nope" (available: scripted)',
      );
      await expect(registry.create('judges', 'rubric', { server: 42 })).rejects.toThrow(
        'judges.rubric.server must be a server instance',
      );
      expect(() => registry.resolve('judges', 'rubrik')).toThrow(NoSuchEntryError);
    } finally {
      await server.close();
    }
  });
});
