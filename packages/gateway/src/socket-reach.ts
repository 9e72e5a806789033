// How a container sandbox with network `none` reaches the gateway: the gateway is served on a
// unix socket in a host folder that the container provider mounts into every container (docker
// sandbox setting `binds: ['<hostDir>:<containerDir>:ro']`), and the harness command is started
// under a tiny relay (node, no dependencies) that listens on the container's own loopback and
// pipes each connection to that socket. The container gets no network interface beyond its
// loopback and no port of the host: it can reach the gateway and nothing else. The session key
// still separates rollouts (every container sees the same socket).
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { InvalidArgumentError } from '@shears/core';
import type { Gateway } from './gateway.js';
import type { HarnessReach } from './harness-env.js';

export interface SocketReachSettings {
  /** Host folder for the gateway's socket and the relay; mount it into the containers. */
  hostDir: string;
  /** Where that folder is inside the containers (default `/run/shears-gateway`). */
  containerDir?: string;
  /** Loopback port of the relay inside each container (default 18080). */
  port?: number;
  /** How node is started inside the container (default `node`). */
  node?: string;
}

export interface SocketReach {
  readonly reach: HarnessReach;
  /** The docker sandbox `binds` entry that mounts the folder. */
  readonly bind: string;
  /** Stops the socket listeners and removes the socket files. */
  close(): Promise<void>;
}

// Listens on 127.0.0.1:<port> inside the container, pipes every connection to the gateway's
// socket, starts the harness command once listening, and exits with the command's exit code.
const RELAY_SOURCE = `// shears gateway relay (written by @shears/gateway): container loopback -> gateway unix socket.
import { connect, createServer } from 'node:net';
import { spawn } from 'node:child_process';
const [port, socket, ...command] = process.argv.slice(2);
const server = createServer((client) => {
  const upstream = connect(socket);
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
server.on('error', (error) => {
  console.error('shears relay: ' + error.message);
  process.exit(125);
});
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(command[0], command.slice(1), { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    console.error('shears relay: ' + error.message);
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + 9 : 1)));
});
`;

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function createSocketReach(settings: SocketReachSettings): SocketReach {
  if (!settings.hostDir.startsWith('/'))
    throw new InvalidArgumentError({
      argument: 'hostDir',
      value: settings.hostDir,
      message: `socket reach: hostDir must be an absolute path (got "${settings.hostDir}")`,
    });
  const containerDir = settings.containerDir ?? '/run/shears-gateway';
  const port = settings.port ?? 18080;
  const node = settings.node ?? 'node';
  const listeners = new Map<Gateway, Promise<{ server: Server; path: string }>>();
  let count = 0;

  const listen = (gateway: Gateway) => {
    let listening = listeners.get(gateway);
    if (!listening) {
      const name = `gateway-${process.pid}-${count++}.sock`;
      listening = (async () => {
        await mkdir(settings.hostDir, { recursive: true });
        await writeFile(join(settings.hostDir, 'relay.mjs'), RELAY_SOURCE);
        const path = join(settings.hostDir, name);
        await rm(path, { force: true });
        const server = createServer(gateway.handle);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(path, () => resolve());
        });
        // A container user other than root must be able to connect; the key guards the sessions.
        await chmod(path, 0o666);
        return { server, path: `${containerDir}/${name}` };
      })();
      listeners.set(gateway, listening);
    }
    return listening;
  };

  return {
    bind: `${settings.hostDir}:${containerDir}:ro`,
    reach: async ({ gateway }) => {
      const { path } = await listen(gateway);
      return {
        origin: `http://127.0.0.1:${port}`,
        wrapCommand: (command) =>
          `${node} ${shellQuote(`${containerDir}/relay.mjs`)} ${port} ${shellQuote(path)} sh -c ${shellQuote(command)}`,
        close: async () => {},
      };
    },
    async close() {
      const all = [...listeners.values()];
      listeners.clear();
      await Promise.allSettled(
        all.map(async (listening) => {
          const { server } = await listening;
          await new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeAllConnections();
        }),
      );
    },
  };
}
