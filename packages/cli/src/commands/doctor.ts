// `shears doctor`: checks what a run needs — Node, the Docker daemon, ssh targets, the inference
// server, the model's tokenizer and the plugins — and says what to fix.
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { safeParseJson } from '@shears/core';
import { composeRegistry, createServer } from '../compose.js';
import type { CommandContext } from '../runtime.js';

export interface Check {
  name: string;
  status: 'ok' | 'fail' | 'skip' | 'warn';
  detail: string;
  fix?: string;
}

function nodeCheck(): Check {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const ok = major > 20 || (major === 20 && minor >= 19);
  return ok
    ? { name: 'node', status: 'ok', detail: `Node ${process.versions.node}` }
    : {
        name: 'node',
        status: 'fail',
        detail: `Node ${process.versions.node}`,
        fix: 'install Node 20.19 or newer (e.g. from nodejs.org or nvm install 20)',
      };
}

function dockerSocket(env: Record<string, string | undefined>): {
  socketPath?: string;
  host?: string;
  port?: number;
} {
  const hostValue = env.DOCKER_HOST;
  if (hostValue?.startsWith('unix://')) return { socketPath: hostValue.slice('unix://'.length) };
  if (hostValue?.startsWith('tcp://')) {
    const url = new URL(hostValue.replace('tcp://', 'http://'));
    return { host: url.hostname, port: Number(url.port || 2375) };
  }
  return { socketPath: '/var/run/docker.sock' };
}

function dockerCheck(env: Record<string, string | undefined>, needed: boolean): Promise<Check> {
  const target = dockerSocket(env);
  const where = target.socketPath ?? `${target.host}:${target.port}`;
  return new Promise((done) => {
    const failed = (detail: string): Check => ({
      name: 'docker',
      status: needed ? 'fail' : 'warn',
      detail: `${detail} (${where})`,
      fix: 'start the daemon (sudo systemctl start docker, or dockerd &) or set DOCKER_HOST; only the docker sandbox needs it',
    });
    const request = httpRequest({ ...target, path: '/_ping', method: 'GET', timeout: 3000 }, (response) => {
      response.resume();
      done(
        response.statusCode === 200
          ? { name: 'docker', status: 'ok', detail: `daemon answers at ${where}` }
          : failed(`daemon answered HTTP ${response.statusCode}`),
      );
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', (error) => done(failed(`no daemon: ${error.message}`)));
    request.end();
  });
}

function sshCheck(target: string): Promise<Check> {
  const match = /^(?:([^@]+)@)?([^:]+)(?::(\d+))?$/.exec(target);
  if (!match)
    return Promise.resolve({
      name: `ssh ${target}`,
      status: 'fail',
      detail: 'not of the form user@host[:port]',
      fix: 'write ssh targets as user@host[:port]',
    });
  const host = match[2]!;
  const port = Number(match[3] ?? 22);
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (check: Check) => {
      socket.destroy();
      done(check);
    };
    socket.setTimeout(3000, () =>
      finish({
        name: `ssh ${target}`,
        status: 'fail',
        detail: 'no banner within 3 s',
        fix: `check that sshd listens on ${host}:${port}`,
      }),
    );
    socket.once('data', (data) => {
      const banner = data.toString('utf8').split('\n')[0]!.trim();
      finish(
        banner.startsWith('SSH-')
          ? { name: `ssh ${target}`, status: 'ok', detail: banner }
          : {
              name: `ssh ${target}`,
              status: 'fail',
              detail: `not an ssh server (${banner.slice(0, 40)})`,
              fix: `${host}:${port} answers but is not sshd`,
            },
      );
    });
    socket.once('error', (error) =>
      finish({
        name: `ssh ${target}`,
        status: 'fail',
        detail: error.message,
        fix: `start sshd on ${host}:${port} or fix sandbox.ssh_targets`,
      }),
    );
  });
}

function tokenizerCheck(path: string | undefined, cwd: string): Check {
  if (!path)
    return {
      name: 'tokenizer',
      status: 'skip',
      detail: 'no server.tokenizer configured (needed for token-level training only)',
    };
  const full = resolve(cwd, path);
  const file = full.endsWith('.json') ? full : resolve(full, 'tokenizer.json');
  if (!existsSync(file))
    return {
      name: 'tokenizer',
      status: 'fail',
      detail: `${file} not found`,
      fix: "point server.tokenizer at the model's tokenizer.json (or its directory)",
    };
  const parsed = safeParseJson(readFileSync(file, 'utf8'), { source: file });
  if (!parsed.success)
    return {
      name: 'tokenizer',
      status: 'fail',
      detail: parsed.error.message,
      fix: 'the tokenizer.json is damaged; download it again',
    };
  const value = parsed.value as { model?: { type?: string; vocab?: object } };
  if (!value.model)
    return {
      name: 'tokenizer',
      status: 'fail',
      detail: `${file} has no "model" section`,
      fix: 'use the Hugging Face tokenizer.json of the model',
    };
  const vocab = value.model.vocab ? Object.keys(value.model.vocab).length : 0;
  return {
    name: 'tokenizer',
    status: 'ok',
    detail: `${value.model.type ?? 'tokenizer'} with ${vocab} vocabulary entries`,
  };
}

async function serverCheck(context: CommandContext): Promise<Check> {
  const { config } = context;
  try {
    const { registry } = await composeRegistry(config, { cwd: context.io.cwd, logger: context.logger });
    const server = await createServer(registry, config, context.apiKey, context.io.cwd);
    try {
      const started = Date.now();
      const response = await server.chat({
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: 4,
        timeoutMs: 15_000,
        signal: context.signal,
      });
      const ms = Date.now() - started;
      return {
        name: 'inference',
        status: response.choices.length ? 'ok' : 'fail',
        detail: `${server.provider} ${server.model} answered a chat request in ${ms} ms`,
      };
    } finally {
      await server.close?.();
    }
  } catch (error) {
    const where = config.server.base_url ?? config.server.provider;
    return {
      name: 'inference',
      status: 'fail',
      detail: context.redact((error as Error).message.split('\n')[0] ?? String(error)),
      fix: `check that the server at ${where} is running, server.model is served there, and the API key (server.api_key / api_key_env) is right`,
    };
  }
}

export async function runChecks(context: CommandContext): Promise<Check[]> {
  const { config } = context;
  const checks: Check[] = [nodeCheck()];
  checks.push(await dockerCheck(context.io.env, config.sandbox.provider === 'docker'));
  for (const target of config.sandbox.ssh_targets) checks.push(await sshCheck(target));
  checks.push(await serverCheck(context));
  checks.push(tokenizerCheck(config.server.tokenizer, context.io.cwd));
  const { plugins } = await composeRegistry(config, { cwd: context.io.cwd, logger: context.logger });
  const missing = plugins.filter((plugin) => !plugin.loaded);
  checks.push(
    missing.length
      ? {
          name: 'plugins',
          status: 'warn',
          detail: `${plugins.length - missing.length} loaded; not available: ${missing.map((plugin) => plugin.name).join(', ')}`,
          fix: 'run bash scripts/setup.sh (pnpm install && pnpm build)',
        }
      : { name: 'plugins', status: 'ok', detail: `${plugins.length} loaded` },
  );
  return checks;
}

const MARK: Record<Check['status'], string> = { ok: '✓', fail: '✗', warn: '!', skip: '–' };

export async function doctorCommand(context: CommandContext): Promise<number> {
  const checks = await runChecks(context);
  if (context.flags.json === true) context.io.stdout(`${JSON.stringify(checks)}\n`);
  else {
    const width = Math.max(...checks.map((check) => check.name.length));
    for (const check of checks) {
      context.io.stdout(`${MARK[check.status]} ${check.name.padEnd(width)}  ${check.detail}\n`);
      if (check.fix && check.status !== 'ok')
        context.io.stdout(`  ${' '.repeat(width)}  fix: ${check.fix}\n`);
    }
  }
  return checks.some((check) => check.status === 'fail') ? 1 : 0;
}
