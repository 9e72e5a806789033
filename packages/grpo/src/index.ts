// @shears/grpo: GRPO advantages, scored-group building, the Atropos-compatible durable
// trajectory API (server, client, sink), and training-data shaping. Named exports only.
export type { BatchPlan, EnvRecord, EnvStatus, QueuedGroup } from './batching.js';
export { computeEnvStatus, findGroupsSummingToTarget, planBatch, planBatchWithMinimums } from './batching.js';
export type { TrajectoryApiServer, TrajectoryApiServerSettings } from './trajectory-api-server.js';
export { startTrajectoryApiServer } from './trajectory-api-server.js';
