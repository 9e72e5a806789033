import { spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

// The runnable parts of a guide in docs/: fenced blocks whose info string names a file
// (```js file=count-words.js) are files to write; ```sh run blocks are commands to run, one a
// line, in order; ```sh install blocks are the install commands (run against a registry by the
// release check, linked by the guide tests).
interface GuideBlocks {
  files: Map<string, string>;
  commands: string[];
  install: string[];
}

export function extractGuide(markdown: string): GuideBlocks {
  const files = new Map<string, string>();
  const commands: string[] = [];
  const install: string[] = [];
  for (const match of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const info = match[1]!.trim().split(/\s+/);
    const body = match[2]!;
    const file = info.find((word) => word.startsWith('file='))?.slice('file='.length);
    if (file) {
      if (files.has(file)) throw new Error(`the guide gives ${file} twice`);
      files.set(file, body);
      continue;
    }
    if (info[0] !== 'sh') continue;
    const lines = body
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    if (info[1] === 'run') commands.push(...lines);
    else if (info[1] === 'install') install.push(...lines);
  }
  return { files, commands, install };
}

/** Links a package folder into `project`'s node_modules, as npm installs it (one copy). */
export function linkPackage(project: string, name: string, target: string): void {
  const path = join(project, 'node_modules', name);
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(realpathSync(target), path, 'dir');
}

/** Runs one of a guide's command lines in `project`, as a user's shell would, offline. */
export function runGuideCommand(project: string, command: string, env: Record<string, string> = {}) {
  const result = spawnSync('bash', ['-c', command], {
    cwd: project,
    encoding: 'utf8',
    // npx must find the linked bins and never fetch a package.
    env: {
      ...process.env,
      CI: 'true',
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
      ...env,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
