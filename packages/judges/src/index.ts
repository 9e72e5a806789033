// @shears/judges: rubric judges, panels and their aggregation, group (listwise) and pairwise
// judges, calibration, verifiable rewards, process rewards and reward composition.

export type { AggregationMethod, Disagreement } from './aggregate.js';
export {
  AGGREGATION_METHODS,
  aggregate,
  disagreement,
  majorityVote,
  mean,
  median,
  standardDeviation,
  trimmedMean,
} from './aggregate.js';
export type {
  AgreementMetrics,
  Calibration,
  CalibrationFit,
  GoldItem,
  LengthBias,
  PositionBias,
} from './calibration.js';
export {
  agreement,
  applyFit,
  averageRanks,
  calibrateJudge,
  cohensKappa,
  createCalibratedJudge,
  fitAffine,
  fitCalibration,
  fitIsotonic,
  lengthBias,
  pearson,
  positionBias,
  spearman,
} from './calibration.js';
export type { ComposedReward, RewardFunctionEntry } from './compose-rewards.js';
export { composeRewards } from './compose-rewards.js';
export type {
  FormatTrajectoryOptions,
  TranscriptSegment,
  TranscriptSource,
  TranscriptView,
} from './format-trajectory.js';
export {
  buildTranscriptView,
  formatTrajectory,
  renderTranscript,
  truncateMiddle,
} from './format-trajectory.js';
export type { GroupJudgeSettings } from './group-judge.js';
export { buildGroupPrompt, createGroupJudge, shuffledIndices } from './group-judge.js';
export { canonicalJson, contentHash } from './hash.js';
export type {
  InjectionAction,
  InjectionRecord,
  InjectionSettings,
  ModelScreenOutcome,
  ModelScreenSettings,
  StrictJudgeSettings,
} from './injection-policy.js';
export { INJECTION_ACTIONS, runModelScreen } from './injection-policy.js';
export type { InjectionRule, InjectionScreen, InjectionSpan, ScreenOptions } from './injection-screen.js';
export {
  AGENT_PENALTY_RULES,
  attributeSpans,
  JUDGE_INJECTION_FLAG,
  redactTranscriptView,
  screenForInjection,
  screenTranscriptView,
} from './injection-screen.js';
export type { JsonSchema } from './json-schema.js';
export { validateJsonSchema } from './json-schema.js';
export type { JudgeCache } from './judge-cache.js';
export { createMemoryJudgeCache, judgeCacheKey, trajectoryHash } from './judge-cache.js';
export type { JudgePricing } from './judge-cost.js';
export { countTokens, resolveUsage } from './judge-cost.js';
export type { JudgeInputRecord, RandomIndex } from './judge-nonce.js';
export {
  createCandidateLabels,
  createJudgeNonce,
  JUDGE_PROMPT_FORMAT,
  judgeNonceOf,
  judgePromptHash,
} from './judge-nonce.js';
export type { JudgePanelSettings, PanelDetails, PanelMemberResult } from './judge-panel.js';
export { createJudgePanel } from './judge-panel.js';
export type { JudgeRewardInput, JudgeRewardOptions } from './judge-reward.js';
export { judgeReward } from './judge-reward.js';
export type {
  PairPosition,
  PairwiseJudge,
  PairwiseJudgeSettings,
  PairwiseOutcome,
} from './pairwise-judge.js';
export { buildPairwisePrompt, createPairwiseJudge } from './pairwise-judge.js';
export { default, default as plugin } from './plugin.js';
export type { ProcessRewardResult, ProcessRewardSettings } from './process-rewards.js';
export { processReward } from './process-rewards.js';
export type { FirstWritten, SpanOrigin } from './provenance.js';
export type { ReplyEcho } from './reply-echo.js';
export type { Rubric, RubricDimension, RubricOptions } from './rubric.js';
export { BINARY_RUBRIC, createRubric, DEFAULT_RUBRIC } from './rubric.js';
export type { ResponseFormatMode, RubricJudgeSettings, RubricPromptOptions } from './rubric-judge.js';
export { buildRubricPrompt, createRubricJudge, recheckRubricPrompt } from './rubric-judge.js';
export { SCREEN_LANGUAGES } from './screen-phrases.js';
export type { FoldedText, NeutralisedText, StructureMatch } from './untrusted-text.js';
export { findStructure, foldText, neutraliseUntrustedText } from './untrusted-text.js';
export type { NonceReply, VerdictParse } from './verdict-parsing.js';
export {
  duplicateJsonKey,
  parseVerdictText,
  selectNonceReply,
  verdictJsonSchema,
} from './verdict-parsing.js';
export type { JsonSchemaRewardResult, TestCommandResult } from './verifiable-rewards.js';
export {
  exactMatch,
  extractFinalAnswer,
  jsonSchemaReward,
  lastBoxed,
  numericMatch,
  parseNumericAnswer,
  parseTestSummary,
  regexMatch,
  testCommandReward,
} from './verifiable-rewards.js';
