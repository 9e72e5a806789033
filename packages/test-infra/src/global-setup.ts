// Global test set-up: starts the real infrastructure the suites need (Docker daemon, sshd, ...)
// once for the whole run and tears it down afterwards. Each service registers itself here.
// Services start in parallel; if one fails, the ones already started are torn down before the
// error is rethrown, so a failed run leaves no daemon behind.
import type { TestProject } from 'vitest/node';
import { startDockerService } from './dockerd.js';
import { startSshService } from './sshd.js';

type Teardown = () => Promise<void> | void;
type Service = () => Promise<{ env: Record<string, string>; teardown: Teardown } | null>;

const SERVICES: Service[] = [startDockerService, startSshService];

export default async function setup(project: TestProject): Promise<Teardown> {
  const results = await Promise.allSettled(SERVICES.map((start) => start()));
  const teardowns: Teardown[] = [];
  for (const result of results)
    if (result.status === 'fulfilled' && result.value) teardowns.push(result.value.teardown);
  const tearDownAll = async () => {
    for (const teardown of teardowns.reverse()) {
      try {
        await teardown();
      } catch (error) {
        console.warn(`[test-infra] teardown failed: ${(error as Error).message}`);
      }
    }
  };
  const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure) {
    await tearDownAll();
    throw failure.reason;
  }
  for (const result of results) {
    if (result.status !== 'fulfilled' || !result.value) continue;
    for (const [key, value] of Object.entries(result.value.env)) {
      process.env[key] = value;
      project.provide?.(key as never, value as never);
    }
  }
  return tearDownAll;
}
