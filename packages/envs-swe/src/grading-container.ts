// The grader's side of a fresh grading container: files go in through the Docker daemon's archive
// API, the tests run as a plain `docker exec` (a new process with the container's own environment
// and working directory, not a shell session anyone else has used) whose results stream (the
// runner's standard output or error, kept apart by Docker's stream framing) comes back whole, a
// timeout or an abort stops the whole container, and the caller reads the results only after
// `settle` has stopped the container: no process of the run is left when they are read.
import { PassThrough } from 'node:stream';
import { AbortedError } from '@shears/core';
import type Dockerode from 'dockerode';
import tar from 'tar-stream';
import { MAX_RESULTS_BYTES, type TestExecutor } from './test-runs.js';

/** The parts of a dockerode Container the grader uses. */
export type GradingContainer = Pick<
  Dockerode.Container,
  'exec' | 'inspect' | 'kill' | 'wait' | 'getArchive' | 'putArchive' | 'pause' | 'unpause' | 'modem'
>;

interface ArchiveFile {
  /** Absolute path in the container. */
  path: string;
  data: string | Uint8Array;
  mode?: number;
}

/** Writes files into a container in one archive (parent directories are created as needed). */
export async function putFiles(container: GradingContainer, files: readonly ArchiveFile[]): Promise<void> {
  if (files.length === 0) return;
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const file of files) {
    const data = typeof file.data === 'string' ? Buffer.from(file.data) : Buffer.from(file.data);
    await new Promise<void>((resolve, reject) =>
      pack.entry(
        { name: file.path.replace(/^\/+/, ''), mode: file.mode ?? 0o644, size: data.length, uid: 0, gid: 0 },
        data,
        (error) => (error ? reject(error) : resolve()),
      ),
    );
  }
  pack.finalize();
  await finished;
  const response = await container.putArchive(Buffer.concat(chunks), { path: '/' });
  // Drain the response so the request completes.
  if (response && typeof (response as NodeJS.ReadableStream).resume === 'function') {
    await new Promise<void>((resolve) => {
      (response as NodeJS.ReadableStream).on('end', resolve);
      (response as NodeJS.ReadableStream).on('error', () => resolve());
      (response as NodeJS.ReadableStream).resume();
    });
  }
}

/** Output kept per test run: the head and the tail, the middle dropped. */
class CappedText {
  private head = '';
  private tail = '';
  private dropped = 0;
  constructor(private readonly limit: number) {}
  push(text: string): void {
    if (this.head.length < this.limit * 0.4) {
      const take = Math.ceil(this.limit * 0.4) - this.head.length;
      this.head += text.slice(0, take);
      text = text.slice(take);
    }
    this.tail += text;
    const tailLimit = Math.floor(this.limit * 0.6);
    if (this.tail.length > tailLimit) {
      this.dropped += this.tail.length - tailLimit;
      this.tail = this.tail.slice(-tailLimit);
    }
  }
  toString(): string {
    return this.dropped > 0
      ? `${this.head}\n[... ${this.dropped} characters of output dropped ...]\n${this.tail}`
      : this.head + this.tail;
  }
}

interface GradingExecutor extends TestExecutor {
  /** Why the container stopped during the run without the grader stopping it, if it did. */
  readonly disruption: string | undefined;
}

/**
 * A test executor over a fresh grading container. `run` is a `docker exec` in `workdir`, its two
 * streams kept apart: the results stream whole, the other capped for people; a timeout or an abort
 * kills the container. `settle` kills the container and waits until it is stopped.
 */
export function dockerTestExecutor(
  container: GradingContainer,
  options: { tempDir: string; workdir: string; maxOutputChars?: number },
): GradingExecutor {
  let stoppedByGrader = false;
  let disruption: string | undefined;
  const stop = async () => {
    stoppedByGrader = true;
    await container.kill({ signal: 'SIGKILL' }).catch(() => undefined);
    await container.wait({ condition: 'not-running' }).catch(() => undefined);
  };
  return {
    tempDir: options.tempDir,
    ownsProcessTree: true,
    get disruption() {
      return disruption;
    },
    async writeFiles(files) {
      await putFiles(container, files);
    },
    async run(argv, runOptions) {
      runOptions.signal?.throwIfAborted();
      const exec = await container.exec({
        Cmd: [...argv],
        WorkingDir: options.workdir,
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
      const stream = (await exec.start({
        hijack: true,
        stdin: false,
      })) as unknown as NodeJS.ReadableStream & {
        destroy?: () => void;
      };
      const output = new CappedText(options.maxOutputChars ?? 400_000);
      const sink = new PassThrough();
      sink.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
      const results: Buffer[] = [];
      let resultsBytes = 0;
      let resultsOverflow = false;
      const resultsSink = new PassThrough();
      resultsSink.on('data', (chunk: Buffer) => {
        if (resultsBytes + chunk.length > MAX_RESULTS_BYTES) resultsOverflow = true;
        else {
          results.push(chunk);
          resultsBytes += chunk.length;
        }
      });
      container.modem.demuxStream(
        stream,
        runOptions.results === 'stdout' ? resultsSink : sink,
        runOptions.results === 'stderr' ? resultsSink : sink,
      );
      let timedOut = false;
      let aborted = false;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          runOptions.signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const timer = setTimeout(() => {
          timedOut = true;
          void stop();
        }, runOptions.timeoutMs);
        const onAbort = () => {
          aborted = true;
          void stop();
          stream.destroy?.();
          done();
        };
        runOptions.signal?.addEventListener('abort', onAbort, { once: true });
        stream.on('end', done);
        stream.on('close', done);
        stream.on('error', done);
      });
      if (aborted) throw new AbortedError({ cause: runOptions.signal?.reason });
      let exitCode: number | null = null;
      try {
        exitCode = (await exec.inspect()).ExitCode ?? null;
      } catch {
        // The container is gone: the exit code is unknown.
      }
      if (!stoppedByGrader) {
        // A run killed by a signal may be the container going down: give Docker a moment to say so.
        if (exitCode === null || exitCode >= 128)
          await Promise.race([
            container.wait({ condition: 'not-running' }).catch(() => undefined),
            new Promise((resolve) => setTimeout(resolve, 1000)),
          ]);
        const state = (await container.inspect().catch(() => undefined))?.State;
        if (state && !state.Running)
          disruption = state.OOMKilled
            ? 'the grading container ran out of memory while the tests ran'
            : `the grading container stopped while the tests ran (exit code ${state.ExitCode})`;
      }
      return {
        output: output.toString(),
        results: Buffer.concat(results).toString('utf8'),
        resultsOverflow,
        exitCode,
        timedOut,
      };
    },
    settle: stop,
  };
}
