// A SWE task pack published as an npm package and named in a config file (`env.settings.tasks:
// my-swe-pack`) is the config's project's, as a plugin named there is: it is found from the config
// file's folder wherever shears is started, the working directory's copy is used with a note when
// only it has one, and a missing pack names the config file's folder.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveSweTasks } from '@shears/envs-swe';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfigPluginPackages } from './config-paths.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'shears-swe-pack-from-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `at`/node_modules/NAME: a task pack package holding one of the bundled tasks. */
function installPack(at: string, name: string): void {
  const root = join(at, 'node_modules', name);
  mkdirSync(join(root, 'tasks'), { recursive: true });
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', shears: { taskPack: 'tasks' } }),
  );
  cpSync(join(repo, 'packages/envs-swe/tasks/js-camel-case'), join(root, 'tasks/js-camel-case'), {
    recursive: true,
  });
}

function resolveFor(settings: Record<string, unknown>, configDir: string, cwd: string) {
  const notes: string[] = [];
  const config = { plugins: [] as string[], env: { name: 'swe', settings } };
  resolveConfigPluginPackages(config, {
    command: 'process',
    configDir,
    cwd,
    note: (line) => notes.push(line),
  });
  return { settings: config.env.settings, notes };
}

describe('a SWE task pack package named in a config file', () => {
  const project = join(dir, 'project');
  const elsewhere = join(dir, 'elsewhere');
  mkdirSync(project, { recursive: true });
  mkdirSync(elsewhere, { recursive: true });
  installPack(project, 'my-swe-pack');

  it('is found from the config file folder when shears starts in another folder', () => {
    const { settings, notes } = resolveFor({ tasks: 'my-swe-pack' }, project, elsewhere);
    expect(settings.from).toBe(project);
    expect(notes).toEqual([]);
    const tasks = resolveSweTasks('my-swe-pack', { from: settings.from as string });
    expect(tasks.map((task) => task.id)).toEqual(['js-camel-case']);
    // Without the config folder, the working directory has no such package.
    expect(() => resolveSweTasks('my-swe-pack', { from: elsewhere })).toThrow(/not installed/);
  });

  it('keeps a from the config writes, and leaves bundled tasks and paths alone', () => {
    expect(resolveFor({ tasks: 'my-swe-pack', from: '/opt/packs' }, project, elsewhere).settings.from).toBe(
      '/opt/packs',
    );
    expect(resolveFor({ tasks: 'bundled' }, project, elsewhere).settings.from).toBeUndefined();
    expect(resolveFor({ tasks: '/abs/pack' }, project, elsewhere).settings.from).toBeUndefined();
  });

  it("uses the working directory's copy with a note when only it has the pack", () => {
    const configOnly = join(dir, 'config-only');
    mkdirSync(configOnly, { recursive: true });
    const { settings, notes } = resolveFor({ tasks: 'my-swe-pack' }, configOnly, project);
    expect(settings.from).toBeUndefined();
    expect(notes.join('\n')).toMatch(
      /not installed for the config file's folder .*config-only.*working directory's copy/,
    );
  });

  it('a pack installed nowhere is refused naming the config file folder', () => {
    const { settings } = resolveFor({ tasks: 'no-such-pack' }, project, elsewhere);
    expect(settings.from).toBe(project);
    expect(() => resolveSweTasks('no-such-pack', { from: settings.from as string })).toThrow(
      new RegExp(`no-such-pack.*not installed.*${project}`),
    );
  });
});
