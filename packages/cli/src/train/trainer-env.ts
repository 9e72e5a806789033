// The reference trainer's Python environment: `shears prepare --trainer` creates it (a venv with
// the `shears-trainer` package and the versions its pyproject.toml pins), `shears doctor` checks
// it (the interpreter runs, torch and shears_trainer import, the installed versions are the pins).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ConfigError } from '@shears/core';
import { referenceTrainerConfigSchema, type ShearsConfig } from '../config/config-schema.js';
import { formatWait } from '../progress/wait-note.js';
import { referencePython, trainerSource } from './reference-trainer.js';

/** How often `prepare --trainer` says again that pip is still installing. */
const PIP_NOTE_EVERY_MS = 30_000;

/** train.reference, or its defaults when the config has none (`shears prepare --trainer` alone). */
function referenceSettings(config: ShearsConfig): NonNullable<ShearsConfig['train']['reference']> {
  return config.train.reference ?? referenceTrainerConfigSchema.parse({ model: '.' });
}

/** `name==version` pins of the trainer's pyproject.toml (dependencies and extras). */
export function trainerPins(source: string): Record<string, string> {
  const text = readFileSync(join(source, 'pyproject.toml'), 'utf8');
  const pins: Record<string, string> = {};
  for (const match of text.matchAll(/"([A-Za-z0-9_.-]+)==([^"\s;]+)"/g))
    pins[match[1]!.toLowerCase()] = match[2]!;
  const version = /^version\s*=\s*"([^"]+)"/m.exec(text);
  if (version) pins['shears-trainer'] = version[1]!;
  return pins;
}

/** What the stamp in the venv records: the trainer's source (pyproject and modules), hashed. */
export function trainerSourceHash(source: string): string {
  const hash = createHash('sha256').update(readFileSync(join(source, 'pyproject.toml')));
  const modules = join(source, 'shears_trainer');
  for (const name of readdirSync(modules).sort())
    if (name.endsWith('.py')) hash.update(name).update(readFileSync(join(modules, name)));
  return hash.digest('hex');
}

export const TRAINER_STAMP = '.shears-trainer';

// Runs in the trainer's interpreter: versions of what the trainer needs, and whether it imports.
const PROBE = `
import json, sys
import importlib.metadata as metadata
out = {"python": sys.version.split()[0], "versions": {}}
for name in ("torch", "transformers", "safetensors", "tokenizers", "peft", "shears-trainer"):
    try:
        out["versions"][name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out["versions"][name] = None
try:
    import torch, transformers, shears_trainer.train  # noqa: F401
    out["imports"] = True
except Exception as error:
    out["imports"] = f"{type(error).__name__}: {error}"
print(json.dumps(out))
`;

interface TrainerProbe {
  python: string;
  versions: Record<string, string | null>;
  imports: true | string;
}

/**
 * Runs a command to its end. `heartbeat`: while it runs, called every `everyMs` with how long it
 * has run (a long pip install is never silent).
 */
export function runChild(
  command: string,
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    onLine?: (line: string) => void;
    signal?: AbortSignal;
    heartbeat?: { everyMs: number; note: (elapsedMs: number) => void };
  },
): Promise<{ code: number | null; output: string; error?: Error }> {
  const started = Date.now();
  const timer = options.heartbeat
    ? setInterval(() => options.heartbeat!.note(Date.now() - started), options.heartbeat.everyMs)
    : undefined;
  return new Promise<{ code: number | null; output: string; error?: Error }>((done) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: options.signal,
    });
    const lines: string[] = [];
    const collect = (stream: NodeJS.ReadableStream | null) => {
      if (!stream) return;
      createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
        lines.push(line);
        options.onLine?.(line);
      });
    };
    collect(child.stdout);
    collect(child.stderr);
    child.once('error', (error) => done({ code: null, output: lines.join('\n'), error }));
    child.once('close', (code) => done({ code, output: lines.join('\n') }));
  }).finally(() => clearInterval(timer));
}

/** Runs the probe in `python`; a string says why it could not. */
export async function probeTrainerPython(python: string): Promise<TrainerProbe | string> {
  const result = await runChild(python, ['-c', PROBE], {});
  if (result.error) return `${python} does not run: ${result.error.message}`;
  const last = result.output.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as TrainerProbe;
  } catch {
    return `${python} exited ${result.code}: ${result.output.trim().split('\n').slice(-3).join(' | ')}`;
  }
}

/** Installed versions that differ from the pins (local labels such as +cpu are ignored). */
export function versionMismatches(probe: TrainerProbe, pins: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const name of ['torch', 'transformers', 'safetensors', 'tokenizers', 'shears-trainer']) {
    const want = pins[name];
    const have = probe.versions[name];
    if (have === null || have === undefined) problems.push(`${name} not installed`);
    else if (want && have.split('+')[0] !== want.split('+')[0])
      problems.push(`${name} ${have} (pinned ${want})`);
  }
  return problems;
}

/**
 * `shears prepare --trainer`: a venv at train.reference.venv with the trainer installed from its
 * source folder (pip reads the index from its own configuration: pip.conf, PIP_INDEX_URL). Kept as
 * it is when its stamp matches the source.
 */
export async function prepareTrainerEnv(options: {
  config: ShearsConfig;
  cwd: string;
  env: Record<string, string | undefined>;
  report: (line: string) => void;
  signal?: AbortSignal;
}): Promise<{ venv: string; python: string; action: 'created' | 'kept'; probe: TrainerProbe }> {
  const reference = referenceSettings(options.config);
  if (reference.python)
    throw new ConfigError({
      message: `train.reference.python (${reference.python}) names an interpreter shears does not manage; \`shears prepare --trainer\` creates the venv at train.reference.venv: remove train.reference.python to use it, or install the trainer into that interpreter yourself (pip install ./trainers[lora])`,
      issues: [
        { path: 'train.reference.python', message: 'not managed by prepare', value: reference.python },
      ],
    });
  const source = trainerSource(options.env);
  if (!source)
    throw new ConfigError({
      message:
        "shears prepare --trainer: the trainer's source (the trainers/ folder of the shears repository) was not found next to this CLI; set SHEARS_TRAINER_SOURCE to that folder",
      issues: [{ path: 'SHEARS_TRAINER_SOURCE', message: 'not found', value: undefined }],
    });
  const venv = resolve(options.cwd, reference.venv);
  const python = referencePython(reference, options.cwd);
  if (!existsSync(join(source, 'pyproject.toml')) || !existsSync(join(source, 'shears_trainer')))
    throw new ConfigError({
      message: `shears prepare --trainer: ${source} is not the trainer's source (no pyproject.toml and shears_trainer/ there); point SHEARS_TRAINER_SOURCE at the repository's trainers/ folder`,
      issues: [{ path: 'SHEARS_TRAINER_SOURCE', message: 'not the trainer source', value: source }],
    });
  const want = trainerSourceHash(source);
  const stamp = join(venv, TRAINER_STAMP);
  const childEnv = { ...process.env, ...options.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  let action: 'created' | 'kept' = 'kept';
  if (!(existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want)) {
    action = 'created';
    mkdirSync(dirname(venv), { recursive: true });
    options.report(`creating ${venv} (python3 -m venv)`);
    const made = await runChild('python3', ['-m', 'venv', venv], { env: childEnv, signal: options.signal });
    if (made.code !== 0)
      throw new ConfigError({
        message: `shears prepare --trainer: python3 -m venv ${venv} failed (${made.error?.message ?? `exit ${made.code}`}): ${made.output.slice(-500)}; install python3 and python3-venv`,
        issues: [{ path: 'train.reference.venv', message: 'venv failed', value: reference.venv }],
      });
    options.report(`installing ${source}[lora] with its pinned versions (pip; this takes minutes)`);
    const installed = await runChild(python, ['-m', 'pip', 'install', '--quiet', `${source}[lora]`], {
      env: childEnv,
      signal: options.signal,
      heartbeat: {
        everyMs: PIP_NOTE_EVERY_MS,
        note: (elapsed) =>
          options.report(
            `still installing ${source}[lora] into ${venv} (pip): ${formatWait(elapsed)} so far`,
          ),
      },
      onLine: (line) => {
        if (!/^WARNING: Location .* is ignored/.test(line)) options.report(`pip: ${line}`);
      },
    });
    if (installed.code !== 0)
      throw new ConfigError({
        message: `shears prepare --trainer: pip install ${source}[lora] into ${venv} failed (exit ${installed.code}); pip reads its index from pip.conf or PIP_INDEX_URL: ${installed.output.slice(-800)}`,
        issues: [{ path: 'train.reference.venv', message: 'pip install failed', value: reference.venv }],
      });
    writeFileSync(stamp, `${want}\n`);
  }
  const probe = await probeTrainerPython(python);
  if (typeof probe === 'string' || probe.imports !== true)
    throw new ConfigError({
      message: `shears prepare --trainer: the trainer in ${venv} does not import: ${typeof probe === 'string' ? probe : probe.imports}`,
      issues: [{ path: 'train.reference.venv', message: 'broken', value: reference.venv }],
    });
  return { venv, python, action, probe };
}

// Runs in the trainer's interpreter: the Ray version and Python version the cluster at argv[1] runs
// (read from its head's GCS, as the cluster driver does before it connects).
const CLUSTER_VERSIONS = `
import json, sys
from shears_cluster.driver import cluster_metadata
print(json.dumps(cluster_metadata(sys.argv[1])))
`;

/**
 * `shears prepare --cluster ray`: Ray in the trainer's environment, at the pin of trainers/pyproject.toml
 * (its `cluster` extra), then, when `address` names a cluster that answers, at that cluster's Ray
 * version (Ray refuses a driver whose version differs). Returns the version installed and why.
 */
export async function installClusterEngine(options: {
  python: string;
  source: string;
  address: string | undefined;
  env: Record<string, string | undefined>;
  report: (line: string) => void;
  signal?: AbortSignal;
}): Promise<{ ray: string; reason: string }> {
  const { python, report } = options;
  const childEnv = { ...process.env, ...options.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  const pin = trainerPins(options.source).ray;
  if (!pin)
    throw new ConfigError({
      message: `shears prepare --cluster ray: ${join(options.source, 'pyproject.toml')} pins no ray (its cluster extra); point SHEARS_TRAINER_SOURCE at the repository's trainers/ folder`,
      issues: [{ path: 'SHEARS_TRAINER_SOURCE', message: 'no ray pin', value: options.source }],
    });
  const install = async (version: string) => {
    report(`installing ray==${version} into ${python} (pip)`);
    const installed = await runChild(python, ['-m', 'pip', 'install', '--quiet', `ray==${version}`], {
      env: childEnv,
      signal: options.signal,
      heartbeat: {
        everyMs: PIP_NOTE_EVERY_MS,
        note: (elapsed) => report(`still installing ray==${version} (pip): ${formatWait(elapsed)} so far`),
      },
      onLine: (line) => report(`pip: ${line}`),
    });
    if (installed.code !== 0)
      throw new ConfigError({
        message: `shears prepare --cluster ray: pip install ray==${version} into ${python} failed (exit ${installed.code}); pip reads its index from pip.conf or PIP_INDEX_URL: ${installed.output.slice(-800)}`,
        issues: [{ path: 'cluster', message: 'pip install failed', value: `ray==${version}` }],
      });
  };
  await install(pin);
  let reason = `the pin of ${join(options.source, 'pyproject.toml')}`;
  if (options.address) {
    const address = options.address.replace(/^ray:\/\//, '');
    const read = await runChild(python, ['-c', CLUSTER_VERSIONS, address], {
      env: childEnv,
      signal: AbortSignal.any([AbortSignal.timeout(60_000), ...(options.signal ? [options.signal] : [])]),
    });
    const last = read.output.trim().split('\n').at(-1) ?? '';
    let theirs: string | undefined;
    try {
      theirs = (JSON.parse(last) as { ray_version?: string }).ray_version;
    } catch {}
    if (!theirs)
      report(
        `cannot read the Ray version of the cluster at ${address} (${read.error?.message ?? read.output.trim().split('\n').slice(-2).join(' | ')}); kept ray==${pin}, the pin`,
      );
    else if (theirs !== pin) {
      await install(theirs);
      reason = `the version of the cluster at ${address}`;
    } else reason = `the pin, which the cluster at ${address} runs too`;
  }
  const probe = await runChild(python, ['-c', 'import ray; print(ray.__version__)'], { env: childEnv });
  const ray = probe.output.trim().split('\n').at(-1) ?? '';
  if (probe.code !== 0)
    throw new ConfigError({
      message: `shears prepare --cluster ray: ray does not import in ${python}: ${probe.output.slice(-500)}`,
      issues: [{ path: 'cluster', message: 'ray does not import', value: python }],
    });
  return { ray, reason };
}
