// The @shears/tools-file plugin manifest: the four file tools and the `file` toolset.
import { definePlugin } from '@shears/core';
import { resolveFileToolsSettings } from './file-tools.js';
import { createPatchTool } from './patch.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool } from './search-files.js';
import { createWriteFileTool } from './write-file.js';

export default definePlugin({
  id: '@shears/tools-file',
  description: 'read_file, write_file, patch and search_files over any shears sandbox',
  tools: {
    read_file: {
      create: (settings) => createReadFileTool(resolveFileToolsSettings(settings)),
      description: 'Read a file with line numbers',
    },
    write_file: {
      create: (settings) => createWriteFileTool(resolveFileToolsSettings(settings)),
      description: 'Write a whole file atomically',
    },
    patch: {
      create: (settings) => createPatchTool(resolveFileToolsSettings(settings)),
      description: 'Find-and-replace or V4A / unified-diff patches',
    },
    search_files: {
      create: (settings) => createSearchFilesTool(resolveFileToolsSettings(settings)),
      description: 'Search contents or file names',
    },
  },
  toolsets: {
    file: {
      description: 'Reading, writing, patching and searching files',
      tools: ['read_file', 'write_file', 'patch', 'search_files'],
    },
  },
});
