// Tests of this package's file tools that run on every backend next to the shared conformance
// suite (bound in file-tool-suite.ts): a symlink planted where write_file puts its temporary file.
import { randomUUID } from 'node:crypto';
import type { SandboxV1 } from '@shears/core';
import { fileToolRunner } from '@shears/core/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileTools, type FileToolsSettings } from '../src/index.js';

export interface FileToolExtrasHooks {
  acquire(): Promise<SandboxV1>;
  release?(sandbox: SandboxV1): Promise<void>;
}

const createTools = (settings?: Record<string, unknown>) => createFileTools(settings as FileToolsSettings);

export function describeFileToolExtras(
  name: string,
  hooks: FileToolExtrasHooks | undefined,
  skipReason?: string,
): void {
  describe.skipIf(!hooks)(`file tools (extras) on ${name}${skipReason ? ` (${skipReason})` : ''}`, () => {
    let sandbox: SandboxV1;
    let run: ReturnType<typeof fileToolRunner>;
    const sh = async (command: string) => {
      const result = await sandbox.exec(command, { cwd: sandbox.workdir });
      if (result.exitCode !== 0)
        throw new Error(`setup command failed (${result.exitCode}): ${command}\n${result.output}`);
      return result.stdout;
    };

    beforeAll(async () => {
      sandbox = await hooks!.acquire();
      run = fileToolRunner(createTools, sandbox);
    });
    afterAll(async () => {
      if (sandbox) await (hooks!.release ? hooks!.release(sandbox) : sandbox.dispose());
    });

    describe('write_file temporary file', () => {
      it('does not follow a symlink planted where a predictable temporary name would be', async () => {
        const outside = `${sandbox.tempDir.replace(/\/+$/, '')}/planted-${randomUUID()}`;
        await sh(`mkdir -p planted '${outside}'`);
        // The tools once wrote to `.shears-write.$$.tmp`: `$$` is the persistent shell's pid on
        // the shell-session backends, or a fresh pid shortly after the current one. Plant a
        // dangling link to a path outside the workspace under every such name.
        await sh(
          `base=$(sh -c 'echo $$'); { echo "$$"; echo "$PPID"; seq "$base" "$((base + 2000))"; } |
  sed 's|.*|${outside}/.shears-write.&.tmp|' | xargs sh -c 'ln -s "$@" planted/' sh`,
        );
        const write = await run('write_file', { path: 'planted/target.txt', content: 'inside\n' });
        expect(write.json).toEqual({ bytes_written: 7, dirs_created: false });
        expect(await sh(`ls -A '${outside}'`)).toBe('');
        expect(
          await sh('if [ -L planted/target.txt ]; then echo link; else cat planted/target.txt; fi'),
        ).toBe('inside\n');
        // mktemp makes 0600 files; a new file still gets the mode the umask gives.
        expect(await sh('stat -c %a planted/target.txt')).toBe(
          await sh(`printf '%o\\n' $(( 0666 & ~0$(umask) ))`),
        );
        await sh(`rm -rf planted '${outside}'`);
      });
    });
  });
}
