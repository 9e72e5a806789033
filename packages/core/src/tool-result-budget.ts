// Tool-result budgets (hermes-agent tools/tool_result_storage.py, layers 2 and 3): an oversized
// tool result is written into the rollout's own sandbox and replaced by a `<persisted-output>`
// block with a preview, so the model can page through the file with read_file; a turn whose
// results together exceed the turn budget has its largest results persisted until it fits.
// The replacement text is exactly hermes' text, because models are trained on it.
import type { BudgetV1 } from './contracts/budget.js';
import { DEFAULT_BUDGET, PINNED_THRESHOLDS } from './contracts/budget.js';
import type { SandboxV1 } from './contracts/sandbox.js';
import type { ToolV1 } from './contracts/tool.js';

export const PERSISTED_OUTPUT_TAG = '<persisted-output>';
const PERSISTED_OUTPUT_CLOSING_TAG = '</persisted-output>';
/** Directory under the sandbox's temp dir where persisted results go. */
export const PERSISTED_RESULTS_DIR = 'hermes-results';
/** Tool name used when layer 3 persists a result (hermes' `__budget_enforcement__`). */
const BUDGET_ENFORCEMENT_TOOL = '__budget_enforcement__';

type BudgetSizes = Pick<BudgetV1, 'defaultResultSize' | 'turnBudget' | 'previewSize' | 'toolOverrides'>;

/**
 * The persistence threshold of a tool: pinned → budget overrides → the tool's own
 * `maxResultChars` → the budget default.
 */
export function resolveResultThreshold(
  toolName: string,
  options: { budget?: Partial<BudgetSizes>; tool?: Pick<ToolV1, 'maxResultChars'> } = {},
): number {
  const pinned = PINNED_THRESHOLDS[toolName];
  if (pinned !== undefined) return pinned;
  const override = options.budget?.toolOverrides?.[toolName];
  if (override !== undefined) return override;
  if (options.tool?.maxResultChars !== undefined) return options.tool.maxResultChars;
  return options.budget?.defaultResultSize ?? DEFAULT_BUDGET.defaultResultSize;
}

/** The first `maxChars` characters, cut after the last newline when it sits past the middle. */
export function generatePreview(content: string, maxChars: number): { preview: string; hasMore: boolean } {
  if (content.length <= maxChars) return { preview: content, hasMore: false };
  let preview = content.slice(0, maxChars);
  const lastNewline = preview.lastIndexOf('\n');
  if (lastNewline > Math.floor(maxChars / 2)) preview = preview.slice(0, lastNewline + 1);
  return { preview, hasMore: true };
}

/** Python's `f"{n:,}"`, independent of the host locale. */
function groupThousands(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function sizeLabel(characters: number): string {
  const kilobytes = characters / 1024;
  return kilobytes >= 1024 ? `${(kilobytes / 1024).toFixed(1)} MB` : `${kilobytes.toFixed(1)} KB`;
}

/** The exact `<persisted-output>` block that replaces a persisted result. */
export function buildPersistedMessage(options: {
  preview: string;
  hasMore: boolean;
  originalSize: number;
  filePath: string;
}): string {
  return (
    `${PERSISTED_OUTPUT_TAG}\n` +
    `This tool result was too large (${groupThousands(options.originalSize)} characters, ${sizeLabel(options.originalSize)}).\n` +
    `Full output saved to: ${options.filePath}\n` +
    'Use the read_file tool with offset and limit to access specific sections of this output.\n\n' +
    `Preview (first ${options.preview.length} chars):\n` +
    options.preview +
    (options.hasMore ? '\n...' : '') +
    `\n${PERSISTED_OUTPUT_CLOSING_TAG}`
  );
}

/** The text used when the result could not be written into the sandbox. */
function buildTruncatedMessage(options: { preview: string; originalSize: number }): string {
  return `${options.preview}\n\n[Truncated: tool response was ${groupThousands(options.originalSize)} chars. Full output could not be saved to sandbox.]`;
}

/** Where a persisted result of this call lives inside the sandbox. */
export function persistedResultPath(sandbox: Pick<SandboxV1, 'tempDir'>, toolCallId: string): string {
  const safeId = toolCallId.replace(/[^A-Za-z0-9._-]/g, '_');
  return `${sandbox.tempDir.replace(/\/+$/, '')}/${PERSISTED_RESULTS_DIR}/${safeId}.txt`;
}

interface PersistToolResultOptions {
  content: string;
  toolName: string;
  toolCallId: string;
  /** The rollout's own sandbox; without one the result is truncated inline. */
  sandbox?: PersistSandbox;
  budget?: Partial<BudgetSizes>;
  tool?: Pick<ToolV1, 'maxResultChars'>;
  /** Explicit threshold, taking precedence over resolution. */
  threshold?: number;
  signal?: AbortSignal;
}

interface PersistToolResultOutcome {
  content: string;
  /** True when the full text was written into the sandbox. */
  persisted: boolean;
  /** True when the text was replaced (persisted, or truncated because the write failed). */
  replaced: boolean;
  path?: string;
}

type PersistSandbox = Pick<SandboxV1, 'tempDir' | 'writeFile'> & Partial<Pick<SandboxV1, 'exec'>>;

function quoteShell(value: string): string {
  return `'${value.replaceAll("'", `'"'"'`)}'`;
}

/** Writes the file; when that fails (a backend that does not create parents), mkdir -p and retry once. */
async function writeIntoSandbox(
  sandbox: PersistSandbox,
  path: string,
  content: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const writeOptions = signal ? { signal } : undefined;
  try {
    await sandbox.writeFile(path, content, writeOptions);
    return true;
  } catch {
    if (!sandbox.exec) return false;
  }
  try {
    const directory = path.slice(0, path.lastIndexOf('/'));
    const made = await sandbox.exec(`mkdir -p ${quoteShell(directory)}`, {
      timeoutMs: 30_000,
      ...writeOptions,
    });
    if (made.exitCode !== 0) return false;
    await sandbox.writeFile(path, content, writeOptions);
    return true;
  } catch {
    return false;
  }
}

/** Layer 2: persists an oversized result into the sandbox and returns the replacement text. */
export async function maybePersistToolResult(
  options: PersistToolResultOptions,
): Promise<PersistToolResultOutcome> {
  const { content } = options;
  const threshold = options.threshold ?? resolveResultThreshold(options.toolName, options);
  if (!Number.isFinite(threshold) || content.length <= threshold) {
    return { content, persisted: false, replaced: false };
  }
  const previewSize = options.budget?.previewSize ?? DEFAULT_BUDGET.previewSize;
  const { preview, hasMore } = generatePreview(content, previewSize);
  if (options.sandbox) {
    const path = persistedResultPath(options.sandbox, options.toolCallId);
    if (await writeIntoSandbox(options.sandbox, path, content, options.signal)) {
      return {
        content: buildPersistedMessage({ preview, hasMore, originalSize: content.length, filePath: path }),
        persisted: true,
        replaced: true,
        path,
      };
    }
    // Otherwise fall through to inline truncation: the model still gets a preview.
  }
  return {
    content: buildTruncatedMessage({ preview, originalSize: content.length }),
    persisted: false,
    replaced: true,
  };
}

interface TurnToolMessage {
  tool_call_id?: string;
  content: string;
  [key: string]: unknown;
}

/**
 * Layer 3: when this turn's tool results together exceed the turn budget, persist the largest
 * not-yet-persisted ones (threshold 0) until the total fits. Mutates the messages in place and
 * returns the ids of the results it persisted or truncated.
 */
export async function enforceTurnBudget(
  messages: TurnToolMessage[],
  options: { sandbox?: PersistSandbox; budget?: Partial<BudgetSizes>; signal?: AbortSignal } = {},
): Promise<string[]> {
  const turnBudget = options.budget?.turnBudget ?? DEFAULT_BUDGET.turnBudget;
  let total = messages.reduce((sum, message) => sum + message.content.length, 0);
  if (total <= turnBudget) return [];
  const candidates = messages
    .map((message, index) => ({ message, index }))
    .filter(({ message }) => !message.content.includes(PERSISTED_OUTPUT_TAG))
    .sort((left, right) => right.message.content.length - left.message.content.length);
  const changed: string[] = [];
  for (const { message, index } of candidates) {
    if (total <= turnBudget) break;
    const id = message.tool_call_id ?? `budget_${index}`;
    const before = message.content.length;
    const outcome = await maybePersistToolResult({
      content: message.content,
      toolName: BUDGET_ENFORCEMENT_TOOL,
      toolCallId: id,
      threshold: 0,
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      ...(options.budget ? { budget: options.budget } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (outcome.replaced) {
      message.content = outcome.content;
      total += outcome.content.length - before;
      changed.push(id);
    }
  }
  return changed;
}
