// The file-tool suite over a temp-dir sandbox with the host's tools (ripgrep) and with nothing
// but busybox on PATH (the grep/find fallbacks an Alpine or busybox image takes).
import { describeFileToolSuite } from './file-tool-suite.js';
import { createTempSandbox, hasBusybox } from './temp-sandbox.js';

describeFileToolSuite('a temp-dir sandbox (host tools)', { acquire: async () => createTempSandbox() });
describeFileToolSuite(
  'a temp-dir sandbox (busybox only)',
  hasBusybox() ? { acquire: async () => createTempSandbox({ busyboxOnly: true }) } : undefined,
  hasBusybox() ? undefined : 'busybox is not installed',
);
