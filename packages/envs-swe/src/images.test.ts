// The SWE env's image-building Docker client reads host URLs the way the docker sandbox does
// (one parser, @shears/tools-terminal's), and never the test-only SHEARS_TEST_DOCKER_HOST.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDockerClient } from './images.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

function modemOf(docker: unknown) {
  return (docker as { modem: Record<string, unknown> }).modem;
}

describe('createDockerClient', () => {
  it('takes every host form the docker sandbox takes, with its default ports', async () => {
    expect(modemOf(await createDockerClient('unix:///run/d.sock')).socketPath).toBe('/run/d.sock');
    expect(modemOf(await createDockerClient('tcp://10.0.0.5'))).toMatchObject({
      host: '10.0.0.5',
      port: 2375,
      protocol: 'http',
    });
    expect(modemOf(await createDockerClient('https://docker.example'))).toMatchObject({
      host: 'docker.example',
      port: 2376,
      protocol: 'https',
    });
    expect(modemOf(await createDockerClient('ssh://builder@docker.example'))).toMatchObject({
      host: 'docker.example',
      port: 22,
      protocol: 'ssh',
      username: 'builder',
    });
  });

  it('names the accepted forms for a host it cannot use', async () => {
    await expect(createDockerClient('ftp://docker.example')).rejects.toThrow(
      /unsupported scheme "ftp:" \(accepted: unix:\/\/\/path\/to\/docker\.sock, tcp:\/\/host:port, https:\/\/host:port, ssh:\/\/user@host\[:port\]\)/,
    );
  });

  it('defaults to $DOCKER_HOST, and ignores the test-only SHEARS_TEST_DOCKER_HOST', async () => {
    vi.stubEnv('SHEARS_TEST_DOCKER_HOST', 'unix:///test-only.sock');
    vi.stubEnv('DOCKER_HOST', 'tcp://127.0.0.1:12375');
    expect(modemOf(await createDockerClient())).toMatchObject({ host: '127.0.0.1', port: 12375 });
    vi.stubEnv('DOCKER_HOST', undefined);
    const fallback = modemOf(await createDockerClient());
    expect(fallback.socketPath).not.toBe('/test-only.sock');
    expect(fallback.host).toBeUndefined();
  });
});
