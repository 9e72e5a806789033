// Every published entry point's types, so that compiling this project with skipLibCheck: false
// checks every .d.ts a user of shears can reach (a missing @types package fails here).
import type * as cli from '@shears/cli';
import type * as core from '@shears/core';
import type * as scripted from '@shears/core/scripted';
import type * as coreTest from '@shears/core/test';
import type * as envsSwe from '@shears/envs-swe';
import type * as grpo from '@shears/grpo';
import type * as judges from '@shears/judges';
import type * as parsers from '@shears/parsers';
import type * as servers from '@shears/servers';
import type * as toolsFile from '@shears/tools-file';
import type * as toolsMcp from '@shears/tools-mcp';
import type * as toolsTerminal from '@shears/tools-terminal';
import type * as toolsWeb from '@shears/tools-web';

export type PublishedModules = [
  typeof cli,
  typeof core,
  typeof scripted,
  typeof coreTest,
  typeof envsSwe,
  typeof grpo,
  typeof judges,
  typeof parsers,
  typeof servers,
  typeof toolsFile,
  typeof toolsMcp,
  typeof toolsTerminal,
  typeof toolsWeb,
];
