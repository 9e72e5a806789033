// The file-tool conformance suite lives in @shears/core/test (so any sandbox backend or file-tool
// implementation can run it); here it is bound to this package's tools.
import { describeFileToolSuite as describeSuite, type FileToolSuiteHooks } from '@shears/core/test';
import { createFileTools, type FileToolsSettings } from '../src/index.js';

export function describeFileToolSuite(
  name: string,
  hooks: Omit<FileToolSuiteHooks, 'createTools'> | undefined,
  skipReason?: string,
): void {
  describeSuite(
    name,
    hooks && { ...hooks, createTools: (settings) => createFileTools(settings as FileToolsSettings) },
    skipReason,
  );
}
