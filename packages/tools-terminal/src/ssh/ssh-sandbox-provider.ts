// The `ssh` sandbox backend: a working directory per sandbox on a remote host, a persistent shell
// session over an ssh2 exec channel, sftp for files. Host keys are checked by default (a
// known_hosts file or a pinned SHA256 fingerprint). A dropped connection is re-established on the
// next command. ssh2 is imported only when a provider connects. Isolation is whatever the remote
// account gives: the sandbox reports `isolated: true` only when the settings say the host is a
// dedicated, disposable machine.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { Readable, Writable } from 'node:stream';
import type { SandboxProviderV1, SandboxSpec, SandboxV1, SpawnedExit, SpawnedProcess } from '@shears/core';
import { InvalidArgumentError, SandboxError, throwIfAborted } from '@shears/core';
import { importOptionalPackage, requireOptionalPackage, runSandboxSetup } from '@shears/core/internal';
import type { Client, ClientChannel, ConnectConfig, SFTPWrapper } from 'ssh2';
import { z } from 'zod';
import type { ShellSandbox } from '../shell-sandbox.js';
import { createShellSandbox } from '../shell-sandbox.js';
import type { ShellTransport } from '../shell-session.js';
import { SHELL_BOOTSTRAP_COMMAND, shellQuote } from '../shell-session.js';

export const sshSandboxSettingsSchema = z
  .object({
    host: z.string().min(1),
    port: z.number().int().min(1).max(65535).optional(),
    username: z.string().min(1),
    /** Private key (PEM/OpenSSH text) or a path to it via `privateKeyPath`. */
    privateKey: z.string().optional(),
    privateKeyPath: z.string().optional(),
    passphrase: z.string().optional(),
    /** ssh-agent socket; `true` uses $SSH_AUTH_SOCK. */
    agent: z.union([z.string(), z.boolean()]).optional(),
    /** known_hosts file used for host-key checking (default ~/.ssh/known_hosts). */
    knownHostsPath: z.string().optional(),
    /** Pinned host key fingerprint, `SHA256:<base64>` as `ssh-keygen -lf` prints it. */
    hostKeyFingerprint: z
      .string()
      .regex(/^SHA256:[A-Za-z0-9+/]+=*$/)
      .optional(),
    /** Host-key checking; turning it off must be explicit and is logged into the error path. */
    strictHostKeyChecking: z.boolean().optional(),
    /** Remote directory under which each sandbox gets `<root>/<id>/{workspace,tmp}`. */
    root: z.string().optional(),
    /** Declare the host a dedicated, disposable machine (sets `isolated: true`). */
    isolatedHost: z.boolean().optional(),
    readyTimeoutMs: z.number().int().positive().optional(),
    keepaliveIntervalMs: z.number().int().nonnegative().optional(),
    maxOutputBytes: z.number().int().positive().optional(),
    env: z.record(z.string(), z.string()).optional(),
  })
  .strict();
export type SshSandboxSettings = z.input<typeof sshSandboxSettingsSchema>;

/** `SHA256:<base64 without padding>` of a raw public key blob, as OpenSSH prints it. */
export function sshFingerprint(key: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

interface KnownHostEntry {
  patterns: string;
  keyType: string;
  key: Buffer;
}

function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    // Markers (@cert-authority, @revoked) are not supported: skip such lines.
    if (fields[0]?.startsWith('@')) continue;
    const [patterns, keyType, data] = fields;
    if (!patterns || !keyType || !data) continue;
    entries.push({ patterns, keyType, key: Buffer.from(data, 'base64') });
  }
  return entries;
}

function hostMatches(patterns: string, host: string, port: number): boolean {
  const name = port === 22 ? host : `[${host}]:${port}`;
  if (patterns.startsWith('|1|')) {
    const [, , salt, hash] = patterns.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  return patterns.split(',').some((pattern) => {
    if (pattern.startsWith('!')) return false;
    const regex = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
    );
    return regex.test(name);
  });
}

/** Kills every process carrying the sandbox marker variable (what the shell and its children inherit). */
function sweepScript(id: string): string {
  const marker = shellQuote(`SHEARS_SANDBOX_ID=${id}`);
  return `for p in $(grep -lzx ${marker} /proc/[0-9]*/environ 2>/dev/null | sed -n 's#^/proc/\\([0-9]*\\)/environ$#\\1#p'); do [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null; done; true`;
}

export interface SshSandboxProvider extends SandboxProviderV1 {
  /** Connections opened so far (one per sandbox, plus reconnects). */
  readonly connectionsOpened: number;
}

/** What needs ssh2, for the error and the doctor line when it is not installed. */
export const SSH2_USE = { usedBy: 'the ssh sandbox', field: 'sandbox.provider' };

export function createSshSandboxProvider(
  settings: SshSandboxSettings | Record<string, unknown>,
): SshSandboxProvider {
  const parsed = sshSandboxSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    throw new InvalidArgumentError({
      argument: 'settings',
      value: settings,
      message: `Invalid ssh sandbox settings: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')} (keys: host, port, username, privateKey, privateKeyPath, passphrase, agent, knownHostsPath, hostKeyFingerprint, strictHostKeyChecking, root, isolatedHost, readyTimeoutMs, keepaliveIntervalMs, maxOutputBytes, env)`,
    });
  }
  const config = parsed.data;
  // ssh2 is an optional peer dependency: say so now, before a run starts, not at the first connect.
  requireOptionalPackage('ssh2', import.meta.url, SSH2_USE);
  const port = config.port ?? 22;
  const root = config.root ?? '/tmp/shears-ssh';
  const live = new Set<SandboxV1>();
  let connectionsOpened = 0;
  let closed = false;

  if (!posix.isAbsolute(root)) {
    throw new InvalidArgumentError({
      argument: 'root',
      value: root,
      message: `ssh sandbox root must be an absolute remote path, got ${JSON.stringify(root)}`,
    });
  }

  /** Connection settings are resolved lazily (files read on first connect, not at construction). */
  const connectConfig = async (): Promise<{
    base: ConnectConfig;
    verify: (key: Buffer) => string | undefined;
  }> => {
    const base: ConnectConfig = {
      host: config.host,
      port,
      username: config.username,
      readyTimeout: config.readyTimeoutMs ?? 20_000,
      keepaliveInterval: config.keepaliveIntervalMs ?? 10_000,
    };
    if (config.privateKey) base.privateKey = config.privateKey;
    else if (config.privateKeyPath) {
      try {
        base.privateKey = await readFile(config.privateKeyPath);
      } catch (error) {
        throw new SandboxError({
          message: `Could not read ssh private key ${config.privateKeyPath}: ${(error as Error).message}`,
          cause: error,
        });
      }
    }
    if (config.passphrase) base.passphrase = config.passphrase;
    if (config.agent) base.agent = config.agent === true ? process.env.SSH_AUTH_SOCK : config.agent;
    if (!base.privateKey && !base.agent) {
      throw new SandboxError({
        message: 'ssh sandbox: no credentials (set privateKey, privateKeyPath or agent)',
      });
    }

    const strict = config.strictHostKeyChecking ?? true;
    let verify: (key: Buffer) => string | undefined;
    if (!strict) {
      verify = () => undefined;
    } else if (config.hostKeyFingerprint) {
      const expected = config.hostKeyFingerprint.replace(/=+$/, '');
      verify = (key) => {
        const actual = sshFingerprint(key);
        return actual === expected
          ? undefined
          : `the server presented ${actual}, but the pinned fingerprint is ${expected}`;
      };
    } else {
      const path = config.knownHostsPath ?? posix.join(homedir(), '.ssh', 'known_hosts');
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        throw new SandboxError({
          message: `ssh host-key checking is on, but known_hosts ${path} cannot be read (${(error as Error).message}); set knownHostsPath or hostKeyFingerprint`,
          cause: error,
        });
      }
      const entries = parseKnownHosts(text).filter((entry) => hostMatches(entry.patterns, config.host, port));
      verify = (key) => {
        if (entries.some((entry) => entry.key.equals(key))) return undefined;
        const name = port === 22 ? config.host : `[${config.host}]:${port}`;
        return entries.length === 0
          ? `${path} has no entry for ${name} (the server presented ${sshFingerprint(key)})`
          : `the server presented ${sshFingerprint(key)}, which does not match the key for ${name} in ${path} (${entries.map((entry) => `${entry.keyType} ${sshFingerprint(entry.key)}`).join(', ')}). The host key changed or this is not the host you expect`;
      };
    }
    return { base, verify };
  };

  const connect = async (): Promise<Client> => {
    const { Client: ClientClass } = await importOptionalPackage('ssh2', () => import('ssh2'), SSH2_USE);
    const { base, verify } = await connectConfig();
    const client = new ClientClass();
    let rejection: string | undefined;
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => {
        const where = `${config.username}@${config.host}:${port}`;
        reject(
          new SandboxError({
            message: rejection
              ? `ssh host key verification failed for ${where}: ${rejection}`
              : `ssh connection to ${where} failed: ${error.message}`,
            cause: error,
          }),
        );
      };
      client.once('ready', () => {
        client.off('error', onError);
        resolve();
      });
      client.once('error', onError);
      client.connect({
        ...base,
        hostVerifier: (key: Buffer) => {
          rejection = verify(key);
          return rejection === undefined;
        },
      });
    });
    connectionsOpened += 1;
    // Commands are small interactive writes; Nagle's algorithm would hold them for delayed ACKs.
    client.setNoDelay(true);
    // Later errors surface as closed channels; an unhandled 'error' event must not crash the process.
    client.on('error', () => undefined);
    return client;
  };

  const execOnce = (client: Client, command: string): Promise<{ code: number | null; output: string }> =>
    new Promise((resolve, reject) => {
      client.exec(command, (error, channel) => {
        if (error) return reject(error);
        let output = '';
        channel.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        channel.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        channel.on('close', (code: number | null) => resolve({ code, output }));
      });
    });

  return {
    specificationVersion: 'v1',
    id: 'ssh',
    get connectionsOpened() {
      return connectionsOpened;
    },
    async acquire(spec: SandboxSpec = {}, options = {}) {
      throwIfAborted(options.signal);
      if (closed) throw new SandboxError({ message: 'The ssh sandbox provider is closed' });
      const id = `ssh-${randomBytes(6).toString('hex')}`;
      const base = posix.join(root, id);
      const workdir = spec.workdir ?? posix.join(base, 'workspace');
      const tempDir = posix.join(base, 'tmp');

      let client: Client | undefined;
      let sftp: SFTPWrapper | undefined;
      let connecting: Promise<Client> | undefined;
      const connection = async (): Promise<Client> => {
        if (client) return client;
        connecting ??= connect()
          .then((opened) => {
            client = opened;
            opened.once('close', () => {
              if (client === opened) {
                client = undefined;
                sftp = undefined;
              }
            });
            return opened;
          })
          .finally(() => {
            connecting = undefined;
          });
        return connecting;
      };
      const sftpSession = async (): Promise<SFTPWrapper> => {
        const active = await connection();
        if (sftp) return sftp;
        const opened = await new Promise<SFTPWrapper>((resolve, reject) =>
          active.sftp((error, wrapper) => (error ? reject(error) : resolve(wrapper))),
        );
        opened.once('close', () => {
          if (sftp === opened) sftp = undefined;
        });
        sftp = opened;
        return opened;
      };

      const fileError = (path: string, action: string, error: unknown) => {
        const code = (error as { code?: number | string }).code;
        return new SandboxError({
          sandboxId: id,
          message:
            code === 2 || code === 'ENOENT'
              ? `No such file in sandbox ${id}: ${path}`
              : `Could not ${action} ${path} in sandbox ${id}: ${(error as Error).message}`,
          cause: error,
        });
      };

      const sandboxEnv: Record<string, string> = {
        ...config.env,
        ...spec.env,
        TMPDIR: tempDir,
        SHEARS_SANDBOX_ID: id,
      };
      const sandbox: ShellSandbox = createShellSandbox({
        id,
        backend: 'ssh',
        workdir,
        tempDir,
        isolated: config.isolatedHost ?? false,
        maxOutputBytes: config.maxOutputBytes,
        env: sandboxEnv,
        sessionSetup: `mkdir -p ${shellQuote(workdir)} ${shellQuote(tempDir)}`,
        async openTransport(): Promise<ShellTransport> {
          const active = await connection();
          const channel = await new Promise<ClientChannel>((resolve, reject) =>
            active.exec(SHELL_BOOTSTRAP_COMMAND, (error, opened) =>
              error ? reject(error) : resolve(opened),
            ),
          );
          return {
            stdin: channel,
            stdout: channel,
            stderr: channel.stderr,
            close: () => {
              channel.close();
            },
            // Out of band on the same connection: costs a channel only when a command times out.
            killProcessGroup: async (pgid, signal) => {
              const target = await connection();
              await execOnce(
                target,
                `kill -${signal.replace('SIG', '')} -${pgid} 2>/dev/null || kill -${signal.replace('SIG', '')} ${pgid} 2>/dev/null; true`,
              );
            },
          };
        },
        // Its own exec channel: a small sh wrapper exports the sandbox environment (the marker
        // variable included, so dispose's sweep ends it), records the pid for kill() and execs.
        async spawn(command, args, spawnOptions): Promise<SpawnedProcess> {
          const env = { ...sandboxEnv, ...spawnOptions.env };
          for (const name of Object.keys(env)) {
            if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
              throw new SandboxError({
                sandboxId: id,
                message: `spawn ${command}: ${JSON.stringify(name)} is not a valid environment variable name`,
              });
          }
          const pidFile = posix.join(tempDir, `spawn-${randomBytes(6).toString('hex')}.pid`);
          const script = [
            ...Object.entries(env).map(([name, value]) => `export ${name}=${shellQuote(value)}`),
            `mkdir -p ${shellQuote(tempDir)} && cd -- ${shellQuote(spawnOptions.cwd)} && echo $$ > ${shellQuote(pidFile)} && exec ${[command, ...args].map(shellQuote).join(' ')}`,
          ].join('; ');
          let channel: ClientChannel;
          try {
            const active = await connection();
            channel = await new Promise<ClientChannel>((resolve, reject) =>
              active.exec(script, (error, opened) => (error ? reject(error) : resolve(opened))),
            );
          } catch (error) {
            throw new SandboxError({
              sandboxId: id,
              message: `Sandbox ${id}: could not start ${command}: ${(error as Error).message}`,
              cause: error,
            });
          }
          let exit: SpawnedExit | undefined;
          channel.on('exit', (code: number | null, signal?: string) => {
            exit =
              typeof code === 'number'
                ? { exitCode: code, signal: null }
                : { exitCode: null, signal: signal ?? 'SIGKILL' };
          });
          channel.on('error', () => undefined);
          channel.stderr.on('error', () => undefined);
          const exited = new Promise<SpawnedExit>((resolve) =>
            channel.once('close', () => resolve(exit ?? { exitCode: null, signal: 'SIGKILL' })),
          );
          let ended = false;
          void exited.then(() => {
            ended = true;
          });
          const kill = async () => {
            if (!ended && client) {
              // The wrapper writes the pid before exec; wait for it (briefly) when kill comes first.
              await execOnce(
                client,
                `p=${shellQuote(pidFile)}; i=0; while [ ! -s "$p" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; kill -9 "$(cat "$p" 2>/dev/null)" 2>/dev/null; rm -f "$p"; true`,
              ).catch(() => undefined);
            }
            channel.close();
            await exited;
          };
          const onAbort = () => void kill();
          spawnOptions.signal?.addEventListener('abort', onAbort, { once: true });
          void exited.then(() => spawnOptions.signal?.removeEventListener('abort', onAbort));
          const stdin = new Writable({
            write: (chunk, _encoding, callback) => {
              channel.write(chunk, callback);
            },
            final: (callback) => {
              channel.end();
              callback();
            },
          });
          stdin.on('error', () => undefined);
          return {
            stdin: Writable.toWeb(stdin) as WritableStream<Uint8Array>,
            stdout: Readable.toWeb(channel) as ReadableStream<Uint8Array>,
            stderr: Readable.toWeb(channel.stderr) as ReadableStream<Uint8Array>,
            exited,
            kill,
          };
        },
        async readFile(path) {
          const wrapper = await sftpSession();
          try {
            const data = await new Promise<Buffer>((resolve, reject) =>
              wrapper.readFile(path, (error, buffer) => (error ? reject(error) : resolve(buffer))),
            );
            return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
          } catch (error) {
            throw fileError(path, 'read', error);
          }
        },
        async writeFile(path, data, fileOptions) {
          const wrapper = await sftpSession();
          // Create missing parents one level at a time (sftp has no mkdir -p).
          const parents: string[] = [];
          for (let dir = posix.dirname(path); dir !== '/' && dir !== '.'; dir = posix.dirname(dir))
            parents.unshift(dir);
          for (const dir of parents) {
            await new Promise<void>((resolve) => wrapper.mkdir(dir, () => resolve()));
          }
          try {
            await new Promise<void>((resolve, reject) =>
              wrapper.writeFile(
                path,
                Buffer.from(data.buffer, data.byteOffset, data.byteLength),
                fileOptions.mode === undefined ? {} : { mode: fileOptions.mode },
                (error) => (error ? reject(error) : resolve()),
              ),
            );
          } catch (error) {
            throw fileError(path, 'write', error);
          }
        },
        async dispose() {
          live.delete(sandbox);
          try {
            const active = await connection();
            await execOnce(active, `${sweepScript(id)}; rm -rf ${shellQuote(base)}`);
          } catch {
            // The host is gone; nothing more to clean from here.
          } finally {
            client?.end();
            client = undefined;
          }
        },
      });
      live.add(sandbox);
      // Connect and open the shell now: acquire fails fast on a bad host, and the first command is fast.
      try {
        await sandbox.exec('true');
      } catch (error) {
        await sandbox.dispose();
        throw (error as { cause?: unknown }).cause &&
          SandboxError.isInstance((error as { cause?: unknown }).cause)
          ? (error as { cause: Error }).cause
          : error;
      }
      try {
        await runSandboxSetup(sandbox, spec, options);
      } catch (error) {
        await sandbox.dispose();
        throw error;
      }
      return sandbox;
    },
    async close() {
      closed = true;
      await Promise.all([...live].map((sandbox) => sandbox.dispose()));
    },
  };
}
