import { InvalidArgumentError } from '@shears/core';
import { describe, expect, it } from 'vitest';
import { pickHost, resolveDockerConnection } from './docker-hosts.js';

describe('resolveDockerConnection', () => {
  it('maps unix, tcp, https and ssh URLs to dockerode options', () => {
    expect(resolveDockerConnection('unix:///var/run/docker.sock')).toEqual({
      socketPath: '/var/run/docker.sock',
    });
    expect(resolveDockerConnection('/tmp/d.sock')).toEqual({ socketPath: '/tmp/d.sock' });
    expect(resolveDockerConnection('tcp://10.0.0.5:2375')).toEqual({
      protocol: 'http',
      host: '10.0.0.5',
      port: 2375,
    });
    expect(resolveDockerConnection({ url: 'https://docker.example:2376', tls: { ca: 'CA' } })).toEqual({
      protocol: 'https',
      host: 'docker.example',
      port: 2376,
      ca: 'CA',
    });
    expect(
      resolveDockerConnection({ url: 'ssh://builder@10.0.0.9', ssh: { privateKey: 'KEY' } }),
    ).toMatchObject({
      protocol: 'ssh',
      host: '10.0.0.9',
      port: 22,
      username: 'builder',
      sshOptions: { privateKey: 'KEY' },
    });
  });

  it('names the accepted forms when a URL is wrong', () => {
    expect(() => resolveDockerConnection('ftp://x')).toThrow(
      /unsupported scheme "ftp:".*unix:\/\/\/path\/to\/docker\.sock/,
    );
    expect(() => resolveDockerConnection('not a url')).toThrow(InvalidArgumentError);
  });
});

describe('pickHost', () => {
  it('places by load relative to weight, skipping full and unhealthy hosts', () => {
    const hosts = [
      { weight: 1, load: 0, healthy: true },
      { weight: 2, load: 0, healthy: true },
    ];
    const placed: number[] = [];
    for (let index = 0; index < 6; index += 1) {
      const chosen = pickHost(hosts);
      placed.push(chosen);
      (hosts[chosen] as { load: number }).load += 1;
    }
    expect(placed.filter((index) => index === 1)).toHaveLength(4);
    expect(
      pickHost([
        { weight: 1, load: 3, maxSandboxes: 3, healthy: true },
        { weight: 1, load: 9, healthy: true },
      ]),
    ).toBe(1);
    expect(
      pickHost([
        { weight: 1, load: 0, healthy: false },
        { weight: 1, load: 5, healthy: true },
      ]),
    ).toBe(1);
    expect(pickHost([{ weight: 1, load: 1, maxSandboxes: 1, healthy: true }])).toBe(-1);
  });
});
