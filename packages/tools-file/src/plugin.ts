// The @shears/tools-file plugin manifest: the four file tools and the `file` toolset; the
// registry checks their settings with the file tools' schema.
import { definePlugin, definePluginEntry } from '@shears/core';
import { createPatchTool } from './patch.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool } from './search-files.js';
import { fileToolsSettingsSchema } from './settings.js';
import { createWriteFileTool } from './write-file.js';

export default definePlugin({
  id: '@shears/tools-file',
  description: 'read_file, write_file, patch and search_files over any shears sandbox',
  tools: {
    read_file: definePluginEntry({
      settings: fileToolsSettingsSchema,
      create: (settings) => createReadFileTool(settings),
      description: 'Read a file with line numbers',
    }),
    write_file: definePluginEntry({
      settings: fileToolsSettingsSchema,
      create: (settings) => createWriteFileTool(settings),
      description: 'Write a whole file atomically',
    }),
    patch: definePluginEntry({
      settings: fileToolsSettingsSchema,
      create: (settings) => createPatchTool(settings),
      description: 'Find-and-replace or V4A / unified-diff patches',
    }),
    search_files: definePluginEntry({
      settings: fileToolsSettingsSchema,
      create: (settings) => createSearchFilesTool(settings),
      description: 'Search contents or file names',
    }),
  },
  toolsets: {
    file: {
      description: 'Reading, writing, patching and searching files',
      tools: ['read_file', 'write_file', 'patch', 'search_files'],
    },
  },
});
