// The HTTP transport of the trajectory API: routing (Atropos's paths, FastAPI's 404/405),
// request bodies (size limits, gzip, the decode workers), response encoding (Starlette's gzip
// from 1000 bytes), CORS, bearer auth, error answers and request counts. What each endpoint
// means lives in trajectory-queue.ts; this file turns HTTP into its calls and back. Bodies are
// http-body.ts; the two routes with more than a call, scored-data-route.ts and batch-route.ts.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@shears/core';
import { metricsText } from './api-metrics.js';
import { batch } from './batch-route.js';
import { EnvStatusError } from './batching.js';
import type { DecodePool } from './decode-pool.js';
import { json, jsonWithFloats, parseBody, readBody, send } from './http-body.js';
import { detail, HttpError, TEXT_PLAIN } from './http-errors.js';
import {
  envIdentifierSchema,
  envRegistrationSchema,
  parseRequest,
  trainerRegistrationSchema,
} from './request-models.js';
import { type ScoredDataScope, scoredData } from './scored-data-route.js';
import type { TrajectoryQueue } from './trajectory-queue.js';

interface HttpTransportSettings {
  /** Largest request body, compressed and decompressed, before 413. */
  maxRequestBytes: number;
  /** `Retry-After` seconds sent with 429. */
  retryAfterSeconds: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  authToken?: string;
  logger: Logger;
}

const ROUTES: Record<string, readonly string[]> = {
  '/': ['GET'],
  '/register': ['POST'],
  '/register-env': ['POST'],
  '/disconnect-env': ['POST'],
  '/wandb_info': ['GET'],
  '/info': ['GET'],
  '/status': ['GET'],
  '/status-env': ['GET'],
  '/scored_data': ['POST'],
  '/scored_data_list': ['POST'],
  '/batch': ['GET'],
  '/latest_example': ['GET'],
  '/reset_data': ['GET'],
  '/metrics': ['GET'],
};

/** The request handler of the trajectory API over `queue`. */
export function createHttpTransport(
  queue: TrajectoryQueue,
  pool: DecodePool,
  settings: HttpTransportSettings,
): (request: IncomingMessage, response: ServerResponse) => void {
  const { maxRequestBytes, logger } = settings;
  const retryAfter = String(settings.retryAfterSeconds);
  const expectedAuth = settings.authToken ? Buffer.from(`Bearer ${settings.authToken}`) : undefined;
  const requests = new Map<string, number>();
  const scoredScope: ScoredDataScope = { queue, pool, maxRequestBytes, retryAfter };

  async function route(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    query: URLSearchParams,
  ): Promise<void> {
    const method = request.method ?? 'GET';
    const limit =
      path === '/scored_data' || path === '/scored_data_list'
        ? maxRequestBytes
        : Math.min(maxRequestBytes, 16 * 1024 * 1024);
    const body = await readBody(request, limit);
    switch (`${method} ${path}`) {
      case 'GET /':
        return json(request, response, '{"message":"AtroposLib API"}');
      case 'POST /register': {
        const input = parseRequest(trainerRegistrationSchema, parseBody(body, request, maxRequestBytes));
        // The uuid is a 128-bit integer: written as a bare JSON number, as Python does.
        return json(request, response, `{"uuid":${queue.register(input).uuid}}`);
      }
      case 'POST /register-env': {
        const input = parseRequest(envRegistrationSchema, parseBody(body, request, maxRequestBytes));
        return json(request, response, JSON.stringify(queue.registerEnv(input)));
      }
      case 'POST /disconnect-env': {
        const input = parseRequest(envIdentifierSchema, parseBody(body, request, maxRequestBytes));
        return json(request, response, JSON.stringify(queue.disconnectEnv(input.env_id)));
      }
      case 'GET /wandb_info':
        return json(request, response, JSON.stringify(queue.wandbInfo()));
      case 'GET /info':
        return json(request, response, JSON.stringify(queue.info()));
      case 'GET /status':
        return json(request, response, JSON.stringify(queue.status()));
      case 'GET /status-env': {
        // Atropos takes `{"env_id"}` as a JSON body on a GET; `?env_id=` is an extension for fetch-only clients.
        const fromQuery = query.get('env_id');
        const input =
          body.length === 0 && fromQuery !== null
            ? parseRequest(envIdentifierSchema, { env_id: fromQuery })
            : parseRequest(envIdentifierSchema, parseBody(body, request, maxRequestBytes));
        let status: ReturnType<TrajectoryQueue['statusEnv']>;
        try {
          status = queue.statusEnv(input.env_id);
        } catch (error) {
          if (error instanceof EnvStatusError)
            throw new HttpError(500, `Internal Server Error: ${error.message}`, TEXT_PLAIN);
          throw error;
        }
        return json(request, response, jsonWithFloats(status, ['unallocated_fraction', 'env_weight']));
      }
      case 'POST /scored_data':
        return scoredData(scoredScope, request, response, body, 'single');
      case 'POST /scored_data_list':
        return scoredData(scoredScope, request, response, body, 'list');
      case 'GET /batch':
        return batch(queue, request, response);
      case 'GET /latest_example':
        return json(request, response, queue.latestExample());
      case 'GET /reset_data':
        queue.reset();
        return send(request, response, 200, 'Reset successful', TEXT_PLAIN);
      case 'GET /metrics':
        return send(
          request,
          response,
          200,
          metricsText(queue, requests),
          'text/plain; version=0.0.4; charset=utf-8',
        );
      default:
        throw detail(405, 'Method Not Allowed', { allow: (ROUTES[path] ?? []).join(', ') });
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const origin = request.headers.origin;
    if (origin) {
      // CORS as Atropos configures it: any origin, credentials allowed.
      response.setHeader('access-control-allow-origin', origin);
      response.setHeader('access-control-allow-credentials', 'true');
      response.setHeader('vary', 'Origin');
    }
    let status = 500;
    try {
      if (request.method === 'OPTIONS' && origin) {
        response.writeHead(200, {
          'access-control-allow-methods': 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT',
          'access-control-allow-headers': String(request.headers['access-control-request-headers'] ?? '*'),
          'access-control-max-age': '600',
          'content-length': '2',
          'content-type': TEXT_PLAIN,
        });
        response.end('OK');
        status = 200;
        return;
      }
      if (expectedAuth) {
        const given = Buffer.from(String(request.headers.authorization ?? ''));
        if (given.length !== expectedAuth.length || !timingSafeEqual(given, expectedAuth)) {
          queue.reject('unauthorized');
          throw detail(401, 'Not authenticated', { 'www-authenticate': 'Bearer' });
        }
      }
      if (!Object.hasOwn(ROUTES, path)) throw detail(404, 'Not Found');
      if (!ROUTES[path]?.includes(request.method ?? ''))
        throw detail(405, 'Method Not Allowed', { allow: (ROUTES[path] ?? []).join(', ') });
      await route(request, response, path, url.searchParams);
      status = response.statusCode;
    } catch (error) {
      if (error instanceof HttpError) {
        status = error.status;
        const close: Record<string, string> = status === 413 ? { connection: 'close' } : {};
        if (!response.headersSent)
          await send(request, response, error.status, error.body, error.contentType, {
            ...error.headers,
            ...close,
          });
        if (status === 413) request.resume();
      } else {
        status = 500;
        logger.error(
          `trajectory API ${request.method} ${path} failed: ${(error as Error)?.stack ?? String(error)}`,
        );
        if (!response.headersSent) await send(request, response, 500, 'Internal Server Error', TEXT_PLAIN);
        else response.destroy();
      }
    } finally {
      const key = `{path="${Object.hasOwn(ROUTES, path) ? path : 'other'}",status="${status}"}`;
      requests.set(key, (requests.get(key) ?? 0) + 1);
    }
  }

  return (request, response) => void handle(request, response);
}
