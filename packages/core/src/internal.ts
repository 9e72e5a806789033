// @shears/core/internal: helpers the shears packages share that are not part of the kernel's
// public API (no semver promise; a plugin outside this repository should not import them).
// Named exports only, in the same shape as every package's index.ts.

export { groupStats } from './advantages.js';
export { closestName, describeValue, isSecretField, valueAtPath } from './config-hints.js';
export { createBudget } from './contracts/budget.js';
export { linkSignals } from './linked-signal.js';
export {
  importOptionalPackage,
  isPackageInstalled,
  type OptionalPackageUse,
  optionalPackageCheck,
  packageDirectory,
  requireOptionalPackage,
} from './optional-package.js';
export { pythonJsonDumps, pythonListRepr, pythonStringRepr } from './python-format.js';
export { pythonJsonDecodeError } from './python-json-error.js';
export { runSandboxSetup, SANDBOX_SETUP_TIMEOUT_MS } from './sandbox-setup.js';
export { sendJson } from './send-json.js';
export { runTurnToolCalls, type ToolCallScope } from './tool-call-execution.js';
export { PERSISTED_RESULTS_DIR, persistedResultPath } from './tool-result-budget.js';
export { toolSchemas } from './tool-schemas.js';
