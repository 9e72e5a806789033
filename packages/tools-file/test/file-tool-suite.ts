// The file-tool conformance suite lives in @shears/core/test (so any sandbox backend or file-tool
// implementation can run it); here it is bound to this package's tools, followed by this
// package's own extras (large files, write_file's temp file, persisted tool results) on the same
// backend.
import { describeFileToolSuite as describeSuite, type FileToolSuiteHooks } from '@shears/core/test';
import { createFileTools, type FileToolsSettings } from '../src/index.js';
import { type ConfinementAttackOptions, describeConfinementAttacks } from './confinement-attacks.js';
import { describeFileToolExtras } from './file-tool-extras.js';

export function describeFileToolSuite(
  name: string,
  hooks: Omit<FileToolSuiteHooks, 'createTools'> | undefined,
  skipReason?: string,
  attacks: ConfinementAttackOptions = {},
): void {
  describeSuite(
    name,
    hooks && { ...hooks, createTools: (settings) => createFileTools(settings as FileToolsSettings) },
    skipReason,
  );
  describeFileToolExtras(name, hooks, skipReason);
  describeConfinementAttacks(name, hooks, skipReason, attacks);
}
