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
export type { GroupAdvantageInput, GroupAdvantageOptions, GroupAdvantageResult } from './advantages.js';
export {
  COUNTED_OUTCOMES,
  computeGroupAdvantages,
  createGroupFilterCounter,
  discountedReturns,
  stepAdvantages,
  tokenAdvantages,
} from './advantages.js';
export {
  TrajectoryApiDatabaseError,
  TrajectoryApiListenError,
  TrajectoryApiLockedError,
} from './api/api-errors.js';
export type { BatchLease, IngestResult, TrajectoryQueueSettings } from './api/trajectory-queue.js';
export { QueueFullError, TrajectoryQueue } from './api/trajectory-queue.js';
export type { ApiSink, ApiSinkSettings } from './api-sink.js';
export { createApiSink } from './api-sink.js';
export type { BatchPlan, EnvRecord, EnvStatus, QueuedGroup } from './batching.js';
export {
  computeEnvStatus,
  findGroupsSummingToTarget,
  planAtroposBatch,
  planAtroposBatchWithMinimums,
  planBatch,
  planBatchWithMinimums,
} from './batching.js';
export type {
  CollapseEvent,
  CollapseMonitor,
  CollapseMonitorSettings,
  Regression,
} from './collapse-monitor.js';
export { createCollapseMonitor } from './collapse-monitor.js';
export type { Curriculum, CurriculumSettings } from './curriculum.js';
export { createCurriculum } from './curriculum.js';
export type { DataMix, MixedBatch } from './data-mix.js';
export { createDataMix, mixOnlineOffline } from './data-mix.js';
export type { DpoExportOptions, DpoPair, SftExportOptions, SftRecord } from './export.js';
export { toDpoPairs, toSftRecords, writeJsonl } from './export.js';
export { default as plugin } from './plugin.js';
export type { ReplayBuffer, ReplayBufferSettings } from './replay-buffer.js';
export { createReplayBuffer, createReplayBufferSink } from './replay-buffer.js';
export type { ReplayStore, ReplayStoreEntry, ReplayStoreSettings } from './replay-store.js';
export { openReplayStore, ReplayStoreError } from './replay-store.js';
export type { BuildScoredDataOptions, RecordToScoredDataOptions, RolloutForGroup } from './scored-group.js';
export {
  buildScoredData,
  StepCreditMismatchError,
  scoredDataFromRecord,
  tokenizeConversation,
  trainedSpans,
} from './scored-group.js';
export type { StepCredit, StepCreditSettings, StepForCredit } from './step-credit.js';
export { stepCredit } from './step-credit.js';
export type {
  EnvRegistration,
  EnvRegistrationResult,
  SubmitResult,
  TrainerRegistration,
  TrajectoryApiClient,
  TrajectoryApiClientSettings,
} from './trajectory-api-client.js';
export { createTrajectoryApiClient } from './trajectory-api-client.js';
export type { TrajectoryApiServer, TrajectoryApiServerSettings } from './trajectory-api-server.js';
export { createTrajectoryApiServer, startTrajectoryApiServer } from './trajectory-api-server.js';
export type { StoreSummary } from './trajectory-store.js';
export { TrajectoryStore } from './trajectory-store.js';

import plugin from './plugin.js';
export default plugin;
