// The `shears` executable itself (spawned from source through tsx): usage, per-command help,
// version, exit codes and stderr for arguments that must be refused rather than ignored.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const bin = join(import.meta.dirname, 'bin.ts');
// Resolved here: the command runs in a scratch directory that has no node_modules.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const cwd = mkdtempSync(join(tmpdir(), 'shears-bin-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));
const shears = (...args: string[]) =>
  spawnSync(process.execPath, ['--conditions=@shears/source', '--import', tsx, bin, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    cwd,
    env: { ...process.env, CI: 'true' },
  });

describe('shears bin', () => {
  it('prints usage with every command and exits 0 for --help', () => {
    const result = shears('--help');
    expect(result.status).toBe(0);
    for (const command of ['process', 'serve', 'evaluate', 'api', 'train', 'view', 'doctor', 'schema'])
      expect(result.stdout).toContain(`  ${command}`);
  });

  it('prints the version and exits 0', () => {
    const version = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).version;
    const result = shears('--version');
    expect({ status: result.status, stdout: result.stdout }).toEqual({ status: 0, stdout: `${version}\n` });
  });

  it("prints a subcommand's own help: its flags, the config it reads and an example", () => {
    const result = shears('api', '--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: shears api');
    expect(result.stdout).toMatch(/--port <N>\s+port of the trajectory API/);
    expect(result.stdout).toContain('Config read: api.');
    expect(result.stdout).toContain('shears api --port 8000');
    expect(result.stdout).not.toContain('--groups');
  });

  it('exits 2 with a message on stderr for a bad flag, and runs nothing', () => {
    const result = shears('process', '--gropus', '2');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("unknown option '--gropus' (Did you mean --groups?)");
    expect(result.stdout).toBe('');
  });

  it('refuses a positional config file, unknown short flags and flags a command does not have', () => {
    writeFileSync(join(cwd, 'shears.yaml'), 'run: { groups: 1 }\n');
    const cases: Array<[string[], string]> = [
      [
        ['process', 'shears.yaml'],
        'shears process takes no positional arguments, got "shears.yaml" (give a config file with --config FILE)',
      ],
      [['process', '-g', '2'], "unknown option '-g'"],
      [['process', '--open'], "unknown option '--open'; shears opens no browser"],
      [
        ['process', '--json'],
        "unknown option '--json'; shears process writes its data to the JSONL at --out",
      ],
      [
        ['view', 'runs/x.jsonl', '--out', 'x.html'],
        "unknown option '--out'; shears view writes the HTML to --html FILE",
      ],
      [
        ['api', '--env.group_size', '8'],
        '--env.group_size: shears api does not read env.group_size (it reads: api.host, api.port,',
      ],
    ];
    for (const [argv, message] of cases) {
      const result = shears(...argv);
      expect(result.stderr, argv.join(' ')).toContain(message);
      expect(result.status, argv.join(' ')).toBe(2);
    }
    // Nothing ran: no output file was written.
    expect(() => readFileSync(join(cwd, 'runs', 'shears.jsonl'))).toThrow();
  });
}, 180_000);
