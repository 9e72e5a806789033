// Global test set-up: starts the real infrastructure the suites need (Docker daemon, sshd, ...)
// once for the whole run and tears it down afterwards. Each service registers itself here.
import type { TestProject } from 'vitest/node';
import { startDockerService } from './dockerd.js';
import { startSshService } from './sshd.js';

type Teardown = () => Promise<void> | void;

export default async function setup(project: TestProject): Promise<Teardown> {
  const teardowns: Teardown[] = [];
  const services: Array<() => Promise<{ env: Record<string, string>; teardown: Teardown } | null>> = [startDockerService, startSshService];
  for (const start of services) {
    const started = await start();
    if (!started) continue;
    for (const [key, value] of Object.entries(started.env)) {
      process.env[key] = value;
      project.provide?.(key as never, value as never);
    }
    teardowns.push(started.teardown);
  }
  return async () => {
    for (const teardown of teardowns.reverse()) await teardown();
  };
}
