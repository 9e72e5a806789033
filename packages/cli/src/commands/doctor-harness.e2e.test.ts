// `shears doctor` checks that a harness env's program can reach the agent gateway from where it
// runs (issue 33 §3): a sandbox of the run's provider is opened, the gateway a rollout would start
// is asked from inside it with the harness's own environment, and what is wrong is named: a proxy
// in that environment, a container sandbox that does not share the host's loopback.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runShears } from '../test-support/run-cli.js';

vi.setConfig({ testTimeout: 180_000 });

const dir = mkdtempSync(join(tmpdir(), 'shears-doctor-harness-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const dockerHost = process.env.SHEARS_TEST_DOCKER_HOST;
const dockerImage = process.env.SHEARS_TEST_DOCKER_IMAGE;

/** A project with a stand-in for the installed qwen CLI (it answers --version) and `config`. */
function project(name: string, config: string): string {
  const cwd = join(dir, name);
  mkdirSync(join(cwd, 'bin'), { recursive: true });
  writeFileSync(join(cwd, 'bin/qwen'), '#!/bin/sh\necho "0.15.10"\n', { mode: 0o755 });
  writeFileSync(join(cwd, 'shears.yaml'), config);
  return cwd;
}

const env = (extra = '') => `env: { name: harness, settings: { preset: qwen-code, bin: ./bin${extra} } }\n`;

describe('`shears doctor` with a harness env: can the harness reach the gateway?', () => {
  it('from a local sandbox it asks the gateway a rollout would start, and it answers', async () => {
    const cwd = project('local-ok', env());
    const run = await runShears(['doctor', '--config', 'shears.yaml'], {
      cwd,
      env: { PATH: process.env.PATH },
    });
    expect(run.stdout).toMatch(
      /✓ harness gateway\s+from the local sandbox, GET http:\/\/127\.0\.0\.1:\d+\/s\/…\/v1\/models answered 200 \(curl\): the harness reaches the gateway/,
    );
  });

  it("names a proxy in the harness's environment that takes its requests away from the gateway", async () => {
    // A proxy nothing listens on, as a harness would inherit it from a corporate shell.
    const cwd = project('local-proxy', env(', env: { http_proxy: "http://127.0.0.1:9" }'));
    const run = await runShears(['doctor', '--config', 'shears.yaml'], {
      cwd,
      env: { PATH: process.env.PATH },
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /✗ harness gateway\s+from the local sandbox, GET http:\/\/127\.0\.0\.1:\d+\/s\/…\/v1\/models got no answer \(curl: curl: \(7\) Failed to connect to 127\.0\.0\.1 port 9[^)]*\); every rollout's harness would fail to reach the model: http_proxy=http:\/\/127\.0\.0\.1:9 is set in the harness's environment and NO_PROXY does not name 127\.0\.0\.1/,
    );
    expect(run.stdout).toMatch(/fix: add the gateway host to NO_PROXY/);
  });

  it('with NO_PROXY naming the gateway host, the same proxy is no obstacle', async () => {
    const cwd = project(
      'local-no-proxy',
      env(', env: { http_proxy: "http://127.0.0.1:9", NO_PROXY: "127.0.0.1,localhost" }'),
    );
    const run = await runShears(['doctor', '--config', 'shears.yaml'], {
      cwd,
      env: { PATH: process.env.PATH },
    });
    expect(run.stdout).toMatch(/✓ harness gateway\s+from the local sandbox/);
  });

  it.skipIf(!dockerHost || !dockerImage)(
    "from a docker sandbox without a reach it fails: the container does not share the host's loopback",
    async () => {
      const cwd = project(
        'docker-no-reach',
        `${env()}sandbox: { provider: docker, settings: { hosts: ["${dockerHost}"], image: "${dockerImage}" } }\n`,
      );
      const run = await runShears(['doctor', '--config', 'shears.yaml'], {
        cwd,
        env: { PATH: process.env.PATH },
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(
        /✗ harness gateway\s+a harness in the docker sandbox cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+: it listens on this machine's loopback, which the docker sandbox does not share/,
      );
      expect(run.stdout).toMatch(
        /fix: use the local sandbox \(sandbox\.provider: local\), or give the harness env a "reach"/,
      );
    },
  );
});
