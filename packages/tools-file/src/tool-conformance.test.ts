// The kernel's ToolV1 conformance suite for each file tool.
import { describeToolConformance } from '@shears/core/test';
import { resolveFileToolsSettings } from './file-tools.js';
import { createPatchTool } from './patch.js';
import { createReadFileTool } from './read-file.js';
import { createSearchFilesTool } from './search-files.js';
import { createWriteFileTool } from './write-file.js';

const settings = resolveFileToolsSettings();
const prepare = async (sandbox: import('@shears/core').SandboxV1) => {
  await sandbox.exec("printf 'hello\\nworld\\n' > notes.txt", { cwd: sandbox.workdir });
};

describeToolConformance({
  tool: () => createReadFileTool(settings),
  validArguments: [{ path: 'notes.txt' }, { path: 'notes.txt', offset: 2, limit: 1 }],
  invalidArguments: [{}, { path: 3 }],
  prepare,
});
describeToolConformance({
  tool: () => createWriteFileTool(settings),
  validArguments: [{ path: 'out/new.txt', content: 'x' }],
  invalidArguments: [{ path: 'a.txt' }, { content: 'x' }],
});
describeToolConformance({
  tool: () => createPatchTool(settings),
  validArguments: [{ mode: 'replace', path: 'notes.txt', old_string: 'hello', new_string: 'hi' }],
  invalidArguments: [{ mode: 'rewrite' }],
  prepare,
});
describeToolConformance({
  tool: () => createSearchFilesTool(settings),
  validArguments: [{ pattern: 'hello' }, { pattern: '*.txt', target: 'files' }],
  invalidArguments: [{}, { pattern: 'x', target: 'everything' }],
  prepare,
});
