// A scripted W&B server for tests: the HTTP protocol @wandb/sdk 0.5.1 speaks (the endpoints and
// payload shapes its sources use), recorded as received. POST /graphql answers the `Viewer` query
// (the key's default entity) and the `UpsertBucket` mutation (create the run); POST
// /files/<entity>/<project>/<run>/file_stream takes history lines, the summary and the final
// `complete` marker. It is not wandb.ai: only what this SDK version sends is answered.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FileStreamPost {
  path: string;
  body: {
    files?: Record<string, { offset: number; content: string[] }>;
    complete?: boolean;
    exitcode?: number;
  };
}

export interface ScriptedWandb {
  url: string;
  /** Authorization headers received, in order. */
  authorizations: string[];
  /** Variables of each UpsertBucket mutation. */
  upserts: Array<Record<string, unknown>>;
  fileStream: FileStreamPost[];
  /** The history rows received, in offset order (one per `wandb.log`). */
  history(): Array<Record<string, unknown>>;
  /** The last summary received. */
  summary(): Record<string, unknown> | undefined;
  completed(): FileStreamPost['body'] | undefined;
  /** Answer GraphQL with this HTTP status (an auth failure: 401). */
  failGraphql?: number;
  /** Cut the connection of every file_stream request (the history never arrives). */
  dropFileStream?: boolean;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startScriptedWandb(options: { entity?: string } = {}): Promise<ScriptedWandb> {
  const entity = options.entity ?? 'scripted-entity';
  const state: ScriptedWandb = {
    url: '',
    authorizations: [],
    upserts: [],
    fileStream: [],
    history() {
      const lines = new Map<number, Record<string, unknown>>();
      for (const post of state.fileStream) {
        const file = post.body.files?.['wandb-history.jsonl'];
        if (!file) continue;
        file.content.forEach((line, index) => {
          lines.set(file.offset + index, JSON.parse(line));
        });
      }
      return [...lines.entries()].sort(([a], [b]) => a - b).map(([, row]) => row);
    },
    summary() {
      const last = state.fileStream.filter((post) => post.body.files?.['wandb-summary.json']).at(-1);
      const content = last?.body.files?.['wandb-summary.json']?.content[0];
      return content ? JSON.parse(content) : undefined;
    },
    completed() {
      return state.fileStream.find((post) => post.body.complete)?.body;
    },
    close: async () => undefined,
  };
  const server: Server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      state.authorizations.push(String(request.headers.authorization ?? ''));
      const json = (status: number, value: unknown) =>
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (request.method === 'POST' && request.url === '/graphql') {
        if (state.failGraphql) return json(state.failGraphql, { errors: [{ message: 'scripted failure' }] });
        const { query, variables } = JSON.parse(body) as {
          query: string;
          variables: Record<string, unknown>;
        };
        if (/query Viewer\b/.test(query))
          return json(200, {
            data: { viewer: { id: 'viewer-1', entity, flags: '{}', teams: { edges: [] } } },
          });
        if (/mutation UpsertBucket\b/.test(query)) {
          state.upserts.push(variables);
          return json(200, {
            data: {
              upsertBucket: {
                bucket: {
                  id: 'bucket-1',
                  name: variables.name,
                  displayName: variables.displayName ?? 'scripted-display-name',
                  description: null,
                  config: variables.config,
                  sweepName: null,
                  project: {
                    id: 'project-1',
                    name: variables.project,
                    entity: { id: 'entity-1', name: variables.entity },
                  },
                },
                inserted: true,
              },
            },
          });
        }
        return json(400, { errors: [{ message: `scripted W&B: unexpected query ${query.slice(0, 60)}` }] });
      }
      if (
        request.method === 'POST' &&
        /^\/files\/[^/]+\/[^/]+\/[^/]+\/file_stream$/.test(request.url ?? '')
      ) {
        if (state.dropFileStream) {
          request.socket.destroy();
          return;
        }
        state.fileStream.push({ path: request.url!, body: JSON.parse(body) });
        return json(200, {});
      }
      json(404, { error: `scripted W&B: no ${request.method} ${request.url}` });
    })().catch((error: unknown) => {
      response.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return state;
}
