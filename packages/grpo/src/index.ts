// @shears/grpo: GRPO advantages, scored-group building, the Atropos-compatible durable
// trajectory API (server, client, sink), and training-data shaping. Named exports only.
// The estimators are @shears/core's (one owner: runGroup's default is the same `grpo`);
// re-exported here so `@shears/grpo` users keep one import.
export type { AdvantageEstimator, GrpoOptions } from '@shears/core';
export {
  ADVANTAGE_ESTIMATORS,
  drGrpoAdvantages,
  grpoAdvantages,
  resolveAdvantageEstimator,
  rlooAdvantages,
} from '@shears/core';
export type {
  GroupAdvantageInput,
  GroupAdvantageOptions,
  GroupAdvantageResult,
} from './advantages/advantages.js';
export {
  COUNTED_OUTCOMES,
  computeGroupAdvantages,
  createGroupFilterCounter,
  discountedReturns,
  stepAdvantages,
  tokenAdvantages,
} from './advantages/advantages.js';
export type {
  BuildScoredDataOptions,
  RecordToScoredDataOptions,
  RolloutForGroup,
} from './advantages/scored-group.js';
export {
  buildScoredData,
  StepCreditMismatchError,
  scoredDataFromRecord,
  tokenizeConversation,
  trainedSpans,
} from './advantages/scored-group.js';
export type { StepCredit, StepCreditSettings, StepForCredit } from './advantages/step-credit.js';
export { stepCredit } from './advantages/step-credit.js';
export {
  TrajectoryApiDatabaseError,
  TrajectoryApiListenError,
  TrajectoryApiLockedError,
} from './api/api-errors.js';
export type { ApiSink, ApiSinkSettings } from './api/api-sink.js';
export { createApiSink } from './api/api-sink.js';
export type { BatchPlan, EnvRecord, EnvStatus, QueuedGroup } from './api/batching.js';
export {
  computeEnvStatus,
  findGroupsSummingToTarget,
  planAtroposBatch,
  planAtroposBatchWithMinimums,
  planBatch,
  planBatchWithMinimums,
} from './api/batching.js';
export type {
  EnvRegistration,
  EnvRegistrationResult,
  SubmitResult,
  TrainerRegistration,
  TrajectoryApiClient,
  TrajectoryApiClientSettings,
} from './api/trajectory-api-client.js';
export { createTrajectoryApiClient } from './api/trajectory-api-client.js';
export type { TrajectoryApiServer, TrajectoryApiServerSettings } from './api/trajectory-api-server.js';
export { createTrajectoryApiServer, startTrajectoryApiServer } from './api/trajectory-api-server.js';
export type { BatchLease, IngestResult, TrajectoryQueueSettings } from './api/trajectory-queue.js';
export { QueueFullError, TrajectoryQueue } from './api/trajectory-queue.js';
export type { StoreSummary } from './api/trajectory-store.js';
export { TrajectoryStore } from './api/trajectory-store.js';
export { default, default as plugin } from './plugin.js';
export type {
  CollapseEvent,
  CollapseMonitor,
  CollapseMonitorSettings,
  Regression,
} from './shaping/collapse-monitor.js';
export { createCollapseMonitor } from './shaping/collapse-monitor.js';
export type { Curriculum, CurriculumSettings } from './shaping/curriculum.js';
export { createCurriculum } from './shaping/curriculum.js';
export type { DataMix, MixedBatch } from './shaping/data-mix.js';
export { createDataMix, mixOnlineOffline } from './shaping/data-mix.js';
export type { DpoExportOptions, DpoPair, SftExportOptions, SftRecord } from './shaping/export.js';
export { toDpoPairs, toSftRecords, writeJsonl } from './shaping/export.js';
export type { ReplayBuffer, ReplayBufferSettings } from './shaping/replay-buffer.js';
export { createReplayBuffer, createReplayBufferSink } from './shaping/replay-buffer.js';
export type { ReplayStore, ReplayStoreEntry, ReplayStoreSettings } from './shaping/replay-store.js';
export { openReplayStore, ReplayStoreError } from './shaping/replay-store.js';
