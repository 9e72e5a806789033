// `shears doctor --cluster ray://HOST:PORT`: the head answers, then the cluster driver's Python
// (cluster.python) checks what it would check before a run — the cluster's Ray and Python
// versions against its own, the alive nodes and their resources, a node advertising Docker when
// the sandboxes are Docker's, a node that can take one env worker — and places nothing.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PluginCheckResult } from '@shears/core';
import type { ShearsConfig } from '../config/config-schema.js';
import { resolveCluster } from '../plan/cluster-plan.js';
import { reachable } from './cluster-serve.js';

const PYTHON_FIX =
  'set cluster.python to a Python with ray==2.58.0 and shears_cluster (pip install -e "./trainers[cluster]")';

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

export async function clusterChecks(
  config: ShearsConfig,
  options: { cwd: string; env: Record<string, string | undefined>; sandboxId: string },
): Promise<PluginCheckResult[]> {
  let cluster: ReturnType<typeof resolveCluster>;
  try {
    cluster = resolveCluster(config, { command: 'serve', cwd: options.cwd });
  } catch (error) {
    return [{ name: 'cluster', status: 'fail', detail: firstLine(error), fix: 'fix cluster.address' }];
  }
  if (!cluster) return [];
  const problem = await reachable(cluster.host, cluster.port, 5000);
  if (problem)
    return [
      {
        name: 'cluster reachable',
        status: 'fail',
        detail: `no Ray head answers at ${cluster.address} (${problem})`,
        fix: `start one with \`ray start --head --port ${cluster.port}\` or point --cluster at a running head`,
      },
    ];
  const checks: PluginCheckResult[] = [
    { name: 'cluster reachable', status: 'ok', detail: `a Ray head answers at ${cluster.address}` },
  ];
  const dir = mkdtempSync(join(tmpdir(), 'shears-cluster-doctor-'));
  try {
    const specPath = join(dir, 'launch.json');
    writeFileSync(
      specPath,
      JSON.stringify({
        address: cluster.address,
        workers: cluster.workers,
        shears: [],
        serve_args: [],
        api_args: [],
        cwd: dir,
        summary: join(dir, 'summary.json'),
        worker_cpus: cluster.workerCpus,
        worker_resources: cluster.workerResources,
        docker_resource: options.sandboxId === 'docker' ? cluster.dockerResource : null,
      }),
    );
    const result = await new Promise<{ code: number | string; stdout: string; stderr: string }>((done) => {
      execFile(
        cluster.python,
        ['-m', 'shears_cluster', '--doctor', specPath],
        { cwd: options.cwd, env: options.env as NodeJS.ProcessEnv, timeout: 180_000 },
        (error, stdout, stderr) =>
          done({
            code: error ? ((error as NodeJS.ErrnoException).code ?? 1) : 0,
            stdout: String(stdout),
            stderr: String(stderr),
          }),
      );
    });
    const last = result.stdout.trim().split('\n').at(-1) ?? '';
    if (result.code !== 0 || !last.startsWith('[')) {
      const said = /^error: .*$/m.exec(result.stderr)?.[0] ?? result.stderr.trim().split('\n').at(-1) ?? '';
      checks.push({
        name: 'cluster python',
        status: 'fail',
        detail: `${cluster.python} -m shears_cluster --doctor failed (${result.code}): ${said}`,
        fix: PYTHON_FIX,
      });
      return checks;
    }
    checks.push(...(JSON.parse(last) as PluginCheckResult[]));
    return checks;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
