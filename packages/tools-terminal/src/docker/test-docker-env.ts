// Test helper: where the test run's private Docker daemon lives (set by @shears/test-infra) and
// whether docker tests must run. Under CI=true a missing daemon is a failure, never a skip.
// Takes vitest's `describe` as an argument so the built package never imports vitest.
type Describe = ((name: string, body: () => void) => void) & {
  skip: (name: string, body: () => void) => void;
};

interface TestDocker {
  host: string;
  image: string;
}

/** The daemon and image from the global set-up, or undefined when none was started. */
export function testDocker(): TestDocker | undefined {
  const host = process.env.SHEARS_TEST_DOCKER_HOST;
  const image = process.env.SHEARS_TEST_DOCKER_IMAGE;
  if (host && image) return { host, image };
  if (process.env.CI === 'true' || process.env.CI === '1') {
    throw new Error(
      'CI=true but SHEARS_TEST_DOCKER_HOST/SHEARS_TEST_DOCKER_IMAGE are not set: the docker daemon did not start (see packages/test-infra/src/dockerd.ts)',
    );
  }
  return undefined;
}

/** `describe` when a test daemon is available, else a loud `describe.skip`. */
export function describeDocker(describe: Describe, name: string, body: (docker: TestDocker) => void): void {
  const docker = testDocker();
  if (!docker) {
    console.warn(
      `\n⚠️  SKIPPING "${name}": no test Docker daemon (SHEARS_TEST_DOCKER_HOST unset; run as root or set it)\n`,
    );
    describe.skip(name, () => {});
    return;
  }
  describe(name, () => body(docker));
}
