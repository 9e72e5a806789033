// Which real sandbox backends this test run can reach. Absent infrastructure is skipped with
// a loud warning on a developer machine and is a failure under CI=true.
const inCi = process.env.CI === 'true' || process.env.CI === '1';

export interface BackendAvailability<T> {
  config: T | undefined;
  reason: string | undefined;
}

function need<T>(
  backend: string,
  vars: string[],
  build: (env: Record<string, string>) => T,
): BackendAvailability<T> {
  const missing = vars.filter((name) => !process.env[name]);
  if (missing.length === 0)
    return {
      config: build(Object.fromEntries(vars.map((name) => [name, process.env[name]!]))),
      reason: undefined,
    };
  const reason = `no ${backend} test infrastructure (${missing.join(', ')} unset)`;
  if (inCi)
    throw new Error(
      `CI=true but ${reason}: the ${backend} file-tool suite must not be skipped (see @shears/test-infra)`,
    );
  console.warn(`\n⚠️  SKIPPING the file-tool suite on ${backend}: ${reason}\n`);
  return { config: undefined, reason };
}

export function dockerInfra() {
  return need('docker', ['SHEARS_TEST_DOCKER_HOST', 'SHEARS_TEST_DOCKER_IMAGE'], (env) => ({
    host: env.SHEARS_TEST_DOCKER_HOST!,
    image: env.SHEARS_TEST_DOCKER_IMAGE!,
  }));
}

export function sshInfra() {
  return need(
    'ssh',
    ['SHEARS_TEST_SSH_HOST', 'SHEARS_TEST_SSH_PORT', 'SHEARS_TEST_SSH_USER', 'SHEARS_TEST_SSH_KEY'],
    (env) => ({
      host: env.SHEARS_TEST_SSH_HOST!,
      port: Number(env.SHEARS_TEST_SSH_PORT),
      user: env.SHEARS_TEST_SSH_USER!,
      key: env.SHEARS_TEST_SSH_KEY!,
      knownHosts: process.env.SHEARS_TEST_SSH_KNOWN_HOSTS,
    }),
  );
}
