// @shears/tools-file: read_file, write_file, patch and search_files over any shears sandbox,
// with paths confined to the sandbox workspace.

export type { PinnedRoot, PinnedRoots } from './confined.js';
export { pinFileToolRoots } from './confined.js';
export { FileToolError } from './file-tool-error.js';
export { createFileTools, resolveFileToolsSettings } from './file-tools.js';
export type { FuzzyMatch, MatchRange } from './fuzzy-match.js';
export { findMatches } from './fuzzy-match.js';
export type { PatchArgs } from './patch.js';
export { createPatchTool, patchInputSchema, patchJsonSchema, replaceInContent } from './patch.js';
export type { Hunk, HunkLine, PatchOperation } from './patch-operations.js';
export { applyHunks, parsePatch, parseUnifiedDiff, parseV4aPatch } from './patch-operations.js';
export { default, default as plugin } from './plugin.js';
export type { ReadFileArgs } from './read-file.js';
export { createReadFileTool, formatLines, readFileInputSchema, readFileJsonSchema } from './read-file.js';
export type { SearchFilesArgs } from './search-files.js';
export { createSearchFilesTool, searchFilesInputSchema, searchFilesJsonSchema } from './search-files.js';
export type { FileToolsSettings, ResolvedFileToolsSettings } from './settings.js';
export { fileToolsSettingsSchema } from './settings.js';
export { createUnifiedDiff } from './unified-diff.js';
export type { PathPolicy, ResolvedPath } from './workspace.js';
export {
  displayPath,
  MAX_NAME_BYTES,
  MAX_PATH_BYTES,
  normalizeToolPath,
  resolveSandboxPath,
} from './workspace.js';
export type { WriteFileArgs } from './write-file.js';
export { createWriteFileTool, writeFileInputSchema, writeFileJsonSchema } from './write-file.js';
