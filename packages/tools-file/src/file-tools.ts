// The four file tools as one set, built from one settings object.
import { ConfigError, type ToolV1 } from '@shears/core';
import { createPatchTool } from './patch.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool } from './search-files.js';
import {
  type FileToolsSettings,
  fileToolsSettingsSchema,
  type ResolvedFileToolsSettings,
} from './settings.js';
import { createWriteFileTool } from './write-file.js';

export function resolveFileToolsSettings(
  settings: FileToolsSettings | Record<string, unknown> = {},
): ResolvedFileToolsSettings {
  const parsed = fileToolsSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: issue.path.join('.') || '(root)',
      message: issue.message,
    }));
    throw new ConfigError({
      message: `Invalid file tool settings: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')} (valid keys: ${Object.keys(fileToolsSettingsSchema.shape).join(', ')})`,
      issues,
    });
  }
  return parsed.data;
}

/** read_file, write_file, patch and search_files, in that order. */
export function createFileTools(settings: FileToolsSettings = {}): ToolV1[] {
  const resolved = resolveFileToolsSettings(settings);
  return [
    createReadFileTool(resolved),
    createWriteFileTool(resolved),
    createPatchTool(resolved),
    createSearchFilesTool(resolved),
  ];
}
