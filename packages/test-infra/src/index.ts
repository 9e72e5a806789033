// @shears/test-infra: the real parts shears' tests and benches run against, started on this
// machine without a registry (see README.md). Private: never published; benches and tests list
// it as a devDependency, and the root vitest.config.ts runs its global set-up.

export type { DockerdHandle, StartDockerdOptions } from './dockerd.js';
export { startDockerd, startDockerService } from './dockerd.js';
export type { EnsureTestImageOptions } from './images.js';
export { ensureTestImage, TEST_IMAGE } from './images.js';
export type { RayCluster, RayNode, RayNodeOptions } from './ray-cluster.js';
export { processTree, startRayCluster } from './ray-cluster.js';
export { startSshService } from './sshd.js';
