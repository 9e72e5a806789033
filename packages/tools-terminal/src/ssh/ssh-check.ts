// `check()` of the ssh sandbox: the host answers as an ssh server (its banner), then a real
// sandbox opens on it with the configured login and runs a command.
import { connect } from 'node:net';
import { type PluginCheckContext, type PluginCheckResult, probeSandboxProvider } from '@shears/core';
import { optionalPackageCheck } from '@shears/core/internal';
import { createSshSandboxProvider, SSH2_USE, type sshSandboxSettingsSchema } from './ssh-sandbox-provider.js';

/** Reads the first line a TCP server sends (an sshd greets with `SSH-2.0-...`). */
export function readBanner(host: string, port: number): Promise<{ banner: string } | { error: string }> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (result: { banner: string } | { error: string }) => {
      socket.destroy();
      done(result);
    };
    socket.setTimeout(3000, () => finish({ error: 'no banner within 3 s' }));
    socket.once('data', (data) => finish({ banner: data.toString('utf8').split('\n')[0]!.trim() }));
    socket.once('error', (error) => finish({ error: error.message }));
  });
}

export async function checkSshSandbox(
  settings: ReturnType<typeof sshSandboxSettingsSchema.parse>,
  context: PluginCheckContext,
): Promise<PluginCheckResult[]> {
  const missing = optionalPackageCheck('ssh2', import.meta.url, SSH2_USE);
  if (missing) return [missing];
  const { host, port = 22, username } = settings;
  const name = `ssh ${username}@${host}:${port}`;
  const fields = `${context.settingsField}.host / port`;
  const result = await readBanner(host, port);
  if ('error' in result)
    return [
      { name, status: 'fail', detail: result.error, fix: `start sshd on ${host}:${port} or fix ${fields}` },
    ];
  if (!result.banner.startsWith('SSH-'))
    return [
      {
        name,
        status: 'fail',
        detail: `not an ssh server (${result.banner.slice(0, 40)})`,
        fix: `${host}:${port} answers but is not sshd; fix ${fields}`,
      },
    ];
  const where = context.settingsField;
  return [
    { name, status: 'ok', detail: result.banner },
    await probeSandboxProvider(() => createSshSandboxProvider(settings), {
      id: 'ssh',
      fix: `check ${where}.username, the key (privateKeyPath / privateKey / agent) and the host key (knownHostsPath / hostKeyFingerprint)`,
      signal: context.signal,
    }),
  ];
}
