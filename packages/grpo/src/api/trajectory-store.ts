// The durable state of the trajectory API: every acknowledged group, the env buffers, formed
// batches and the run state live in one SQLite file (WAL). Group payloads stay on disk; the
// heap holds only a few numbers per queued group. Every mutation is one transaction, committed
// before the HTTP answer, so a restart after `kill -9` resumes exactly where it stopped.

import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import * as zlib from 'node:zlib';
import { ConfigError } from '@shears/core';
import type BetterSqlite3 from 'better-sqlite3';
import { TrajectoryApiDatabaseError, TrajectoryApiLockedError } from './api-errors.js';
import { type BatchPlan, type EnvRecord, findGroupsSummingToTarget, type QueuedGroup } from './batching.js';
import type { DecodedGroup } from './wire-decode.js';
import { splitGroupText } from './wire-text.js';

/** What Atropos keeps on `app.state`, minus the queue (which is the groups table). */
interface RunState {
  /** A trainer registered since the last reset (Atropos: "the queue exists"). */
  registered: boolean;
  group: string | null;
  project: string | null;
  batchSize: number;
  maxTokenLen: number;
  checkpointDir: string | null;
  saveCheckpointInterval: number | null;
  numSteps: number;
  step: number;
  started: boolean;
  envs: EnvRecord[];
  requesters: number;
  latestId: number | null;
  nextId: number;
  nextBatchNo: number;
}

export interface StoredGroup extends QueuedGroup {
  bytes: number;
}

export interface FormedBatch {
  batchNo: number;
  groups: StoredGroup[];
}

export interface StoredPayload {
  encoding: 0 | 1;
  suffix: string;
  payload: Buffer;
}

export type Synchronous = 'full' | 'normal';

/** What a store held when it was opened (a queue left by an earlier run is resumed). */
export interface StoreSummary {
  /** Groups on disk: queued, buffered and formed. */
  groups: number;
  queued: number;
  buffered: number;
  formedBatches: number;
  /** When the oldest stored group was received (ms since the epoch); null if unknown. */
  oldestReceivedAt: number | null;
}

const STATE_QUEUED = 0;
const STATE_BUFFERED = 1;
const STATE_FORMED = 2;

function initialRun(): RunState {
  return {
    registered: false,
    group: null,
    project: null,
    batchSize: -1,
    maxTokenLen: -1,
    checkpointDir: null,
    saveCheckpointInterval: null,
    numSteps: -1,
    step: 0,
    started: false,
    envs: [],
    requesters: 0,
    latestId: null,
    nextId: 1,
    nextBatchNo: 1,
  };
}

/** The JSON text of a stored group with all 14 keys. */
function groupText(stored: StoredPayload): string {
  const text = (stored.encoding === 1 ? zlib.gunzipSync(stored.payload) : stored.payload).toString('utf8');
  return joinSuffix(text, stored.suffix);
}

/**
 * A stored group's bytes with its missing keys spliced in before the final `}`, as two pieces
 * (no copy of the ~2 MB body): everything before that `}`, then the suffix and the rest.
 */
export function withSuffix(bytes: Buffer, suffix: string): [Buffer, Buffer] {
  if (suffix === '') return [bytes, Buffer.alloc(0)];
  let end = bytes.length - 1;
  while (end > 0 && bytes[end] !== 125) end--;
  return [bytes.subarray(0, end), Buffer.concat([Buffer.from(suffix, 'latin1'), bytes.subarray(end)])];
}

export function joinSuffix(text: string, suffix: string): string {
  if (suffix === '') return text;
  const end = text.lastIndexOf('}');
  return `${text.slice(0, end)}${suffix}}`;
}

// Who holds a queue, from the note the holder writes beside it (the lock itself is SQLite's).
function readOwner(path: string): { pid?: number; host?: string; startedAt?: string } | undefined {
  try {
    return JSON.parse(readFileSync(`${path}.owner`, 'utf8')) as {
      pid?: number;
      host?: string;
      startedAt?: string;
    };
  } catch {
    return undefined;
  }
}

export class TrajectoryStore {
  run: RunState = initialRun();
  /** Queued groups in FIFO order. */
  queue: StoredGroup[] = [];
  /** Per env: groups smaller than the env's registered size, waiting to be combined. */
  buffers = new Map<number, StoredGroup[]>();
  /** Formed but not yet served batches, oldest first. */
  formed: FormedBatch[] = [];
  storedGroups = 0;
  storedBytes = 0;

  private constructor(private readonly db: BetterSqlite3.Database) {}

  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  /** A prepared statement, prepared once per store (preparing costs more than a small insert). */
  private sql(source: string): BetterSqlite3.Statement {
    let statement = this.statements.get(source);
    if (statement === undefined) {
      statement = this.db.prepare(source);
      this.statements.set(source, statement);
    }
    return statement;
  }

  static async open(options: { path: string; synchronous?: Synchronous }): Promise<TrajectoryStore> {
    let Database: typeof BetterSqlite3;
    try {
      // Loaded only when a server starts: the rest of the package works without the native module.
      Database = (await import('better-sqlite3')).default;
    } catch (error) {
      throw new ConfigError({
        message: `The trajectory API needs better-sqlite3 (install it next to @shears/grpo): ${(error as Error).message}`,
        cause: error,
      });
    }
    const durable = options.path !== ':memory:' && options.path !== '';
    let db: BetterSqlite3.Database;
    if (durable) {
      // A missing folder is created, as for run.out.
      const folder = dirname(options.path);
      try {
        mkdirSync(folder, { recursive: true });
      } catch (error) {
        const code = (error as { code?: string }).code;
        const reason =
          code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in the way' : (error as Error).message;
        throw new TrajectoryApiDatabaseError(
          options.path,
          `cannot create the folder ${folder}: ${reason}`,
          error,
        );
      }
    }
    try {
      db = new Database(options.path, { timeout: 0 });
    } catch (error) {
      throw new TrajectoryApiDatabaseError(options.path, (error as Error).message, error);
    }
    // Payloads are ~1 MB: 64 KiB pages store one in 13 overflow pages instead of 200, which
    // cuts the CPU of writing it to the WAL and checkpointing it about 3×. Takes effect on a new
    // file only (an existing queue keeps its page size).
    db.pragma('page_size = 65536');
    try {
      // One server per queue: the connection holds an exclusive lock on the file for as long as
      // it is open (the OS releases it if the process dies), so a second server is refused
      // instead of both serving the same groups.
      if (durable) {
        db.pragma('locking_mode = EXCLUSIVE');
        db.exec('BEGIN EXCLUSIVE; COMMIT');
      }
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY')
        throw new TrajectoryApiLockedError(options.path, readOwner(options.path), error);
      throw new TrajectoryApiDatabaseError(options.path, (error as Error).message, error);
    }
    const walMode = db.pragma('journal_mode = WAL', { simple: true }) === 'wal';
    // FULL: the WAL is fsynced at every commit, so an acknowledged group survives power loss,
    // not just a process crash. NORMAL is crash-safe for the process (kill -9) but may lose the
    // last commits on an OS crash; it is offered for throughput on trusted storage.
    // With a WAL file, FULL is implemented here rather than by SQLite: the connection runs at
    // NORMAL and the store fdatasyncs the WAL itself after each commit (see `durable`), which
    // lets ingest wait for that fsync on the libuv pool instead of blocking the event loop.
    const ownSync = options.synchronous !== 'normal' && walMode;
    db.pragma(`synchronous = ${options.synchronous === 'normal' || ownSync ? 'NORMAL' : 'FULL'}`);
    // Payloads are large: checkpoint every 64 MiB of WAL instead of after nearly every commit.
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.round((64 * 1024 * 1024) / pageSize))}`);
    db.exec(`
      CREATE TABLE IF NOT EXISTS groups (
        id INTEGER PRIMARY KEY,
        ord INTEGER NOT NULL,
        env_id INTEGER,
        size INTEGER NOT NULL,
        state INTEGER NOT NULL,
        batch_no INTEGER,
        pos INTEGER,
        encoding INTEGER NOT NULL,
        suffix TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        received_at INTEGER,
        -- 1 for the rest of a group split at a batch boundary (it goes into the next batch).
        rest INTEGER
      );
      -- Payloads apart from the metadata: updating a row rewrites it whole, and batch formation
      -- updates state/batch_no of many rows at once.
      CREATE TABLE IF NOT EXISTS payloads (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS groups_batch ON groups (batch_no);
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, response TEXT NOT NULL);
      -- Batches handed to a trainer whose groups are not deleted yet: one small row, so the
      -- commit that follows the last bytes of a /batch response writes a page, not the payloads.
      CREATE TABLE IF NOT EXISTS delivered (batch_no INTEGER PRIMARY KEY);
    `);
    // Queues written before received_at existed.
    const columns = db.prepare('PRAGMA table_info(groups)').all() as { name: string }[];
    if (!columns.some((column) => column.name === 'received_at'))
      db.exec('ALTER TABLE groups ADD COLUMN received_at INTEGER');
    // ... and before rest existed.
    if (!columns.some((column) => column.name === 'rest'))
      db.exec('ALTER TABLE groups ADD COLUMN rest INTEGER');
    const store = new TrajectoryStore(db);
    store.load();
    if (durable) {
      store.ownerPath = `${options.path}.owner`;
      writeFileSync(
        store.ownerPath,
        `${JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() })}\n`,
      );
    }
    const walPath = `${options.path}-wal`;
    if (ownSync && existsSync(walPath)) {
      store.walFd = openSync(walPath, 'r');
      // The WAL's directory entry must be durable too (SQLite does this on its first sync).
      const directory = openSync(dirname(walPath), 'r');
      try {
        fsyncSync(directory);
      } finally {
        closeSync(directory);
      }
      fdatasyncSync(store.walFd);
    } else if (ownSync) db.pragma('synchronous = FULL');
    return store;
  }

  private load(): void {
    const row = this.sql('SELECT value FROM meta WHERE key = ?').get('run') as { value: string } | undefined;
    this.run = row ? { ...initialRun(), ...(JSON.parse(row.value) as Partial<RunState>) } : initialRun();
    this.removeDelivered();
    const rows = this.sql(
      'SELECT id, env_id AS envId, size, state, batch_no AS batchNo, bytes, rest FROM groups ORDER BY state, batch_no, pos, ord, id',
    ).all() as {
      id: number;
      envId: number | null;
      size: number;
      state: number;
      batchNo: number | null;
      bytes: number;
      rest: number | null;
    }[];
    this.queue = [];
    this.buffers.clear();
    this.formed = [];
    this.storedGroups = 0;
    this.storedBytes = 0;
    for (const { state, batchNo, rest, ...fields } of rows) {
      const group: StoredGroup = rest ? { ...fields, rest: true } : fields;
      this.storedGroups++;
      this.storedBytes += group.bytes;
      if (state === STATE_QUEUED) this.queue.push(group);
      else if (state === STATE_BUFFERED) {
        const list = this.buffers.get(group.envId ?? -1) ?? [];
        list.push(group);
        this.buffers.set(group.envId ?? -1, list);
      } else {
        const last = this.formed[this.formed.length - 1];
        if (last && last.batchNo === batchNo) last.groups.push(group);
        else this.formed.push({ batchNo: batchNo ?? 0, groups: [group] });
      }
    }
  }

  private saveRun(): void {
    this.sql(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    ).run('run', JSON.stringify(this.run));
  }

  /** Runs `change` and persists the run state in one transaction, durable when it returns. */
  transaction<T>(change: () => T): T {
    const result = this.transactionUnsynced(change);
    this.syncCommitted();
    return result;
  }

  /**
   * Like `transaction`, but returns once committed, before the WAL is fsynced: the caller must
   * `await durable()` before telling anyone the change happened. Any later `transaction`
   * (forming or serving a batch) syncs these commits too, so nothing unsynced is ever served.
   */
  transactionUnsynced<T>(change: () => T): T {
    return this.db.transaction(() => {
      const result = change();
      this.saveRun();
      return result;
    })();
  }

  /** Resolves once every commit made so far is on disk (one fdatasync covers all waiters). */
  durable(): Promise<void> {
    if (this.walFd === undefined) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push({ resolve, reject });
      if (!this.syncRunning) this.startSync();
    });
  }

  // What SQLite's FULL would have done at the commit just made. Nested calls are savepoints:
  // only the outermost commit is synced.
  private syncCommitted(): void {
    if (this.walFd !== undefined && !this.db.inTransaction) fdatasyncSync(this.walFd);
  }

  private walFd: number | undefined;
  private syncRunning = false;
  private syncWaiters: { resolve: () => void; reject: (error: Error) => void }[] = [];

  // Waiters that arrive while a sync runs may have committed after it started: they get the
  // next one.
  private startSync(): void {
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    this.syncRunning = true;
    const fd = this.walFd as number;
    fdatasync(fd, (error) => {
      this.syncRunning = false;
      if (this.walFd === undefined) closeSync(fd); // closed while syncing
      for (const waiter of waiters) {
        if (error) waiter.reject(error);
        else waiter.resolve();
      }
      if (this.syncWaiters.length > 0 && this.walFd !== undefined) this.startSync();
    });
  }

  private keysSincePrune = 0;

  idempotentResponse(key: string): string | undefined {
    const row = this.sql('SELECT response FROM idempotency WHERE key = ?').get(key) as
      | { response: string }
      | undefined;
    return row?.response;
  }

  /**
   * Stores submitted groups (§1.5 semantics, but a group larger than its env's registered
   * size goes straight to the queue instead of being buffered forever). Returns per group
   * `undefined` (queued) or the env buffer's remaining sequences.
   */
  ingest(
    groups: DecodedGroup[],
    options: {
      idempotencyKey?: string;
      respond: (buffered: (number | undefined)[]) => string;
      idempotencyLimit: number;
    },
  ): string {
    const insert = this.sql(
      'INSERT INTO groups (id, ord, env_id, size, state, encoding, suffix, bytes, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const receivedAt = Date.now();
    const insertPayload = this.sql('INSERT INTO payloads (id, payload) VALUES (?, ?)');
    const requeue = this.sql('UPDATE groups SET state = 0, ord = ? WHERE id = ?');
    return this.transaction(() => {
      const outcome: (number | undefined)[] = [];
      for (const group of groups) {
        const id = this.run.nextId++;
        const stored: StoredGroup = {
          id,
          envId: group.envId,
          size: group.size,
          bytes: group.payload.byteLength,
        };
        const env =
          group.envId !== null && group.envId >= 0 && group.envId < this.run.envs.length
            ? this.run.envs[group.envId]
            : undefined;
        // Measured against the size the env registered, not the one /status-env grew: once one
        // larger group (an env whose rollouts can hold several sequences) had grown it, every
        // group of the registered size would otherwise wait in the buffer for others to sum to the
        // grown size, and groups of sizes that never sum to it would wait forever while the
        // trainer starves (it did: 1,800 buffered groups, no batch for minutes).
        const expected = env === undefined ? 0 : (env.registered_group_size ?? env.group_size);
        const buffered = env !== undefined && group.size < expected;
        insert.run(
          id,
          id,
          group.envId,
          group.size,
          buffered ? STATE_BUFFERED : STATE_QUEUED,
          group.encoding,
          group.suffix,
          stored.bytes,
          receivedAt,
        );
        insertPayload.run(id, group.payload);
        this.storedGroups++;
        this.storedBytes += stored.bytes;
        if (!buffered || env === undefined) {
          this.queue.push(stored);
          this.run.latestId = id;
          outcome.push(undefined);
          continue;
        }
        const buffer = this.buffers.get(stored.envId as number) ?? [];
        buffer.push(stored);
        const chosen = findGroupsSummingToTarget(
          buffer.map((item) => item.size),
          expected,
        );
        if (chosen.length > 0) {
          for (const index of chosen) {
            const item = buffer[index] as StoredGroup;
            requeue.run(this.run.nextId++, item.id);
            this.queue.push(item);
            this.run.latestId = item.id;
          }
          const keep = buffer.filter((_, index) => !chosen.includes(index));
          buffer.length = 0;
          buffer.push(...keep);
        }
        this.buffers.set(stored.envId as number, buffer);
        outcome.push(buffer.reduce((sum, item) => sum + item.size, 0));
      }
      const response = options.respond(outcome);
      if (options.idempotencyKey !== undefined) {
        this.sql('INSERT OR REPLACE INTO idempotency (key, response) VALUES (?, ?)').run(
          options.idempotencyKey,
          response,
        );
        // Pruned every 1,000 keys (and at the first keyed POST after a start), so the table
        // never holds more than the limit plus 1,000 keys, however many groups each POST carries.
        if (this.keysSincePrune === 0) {
          this.sql('DELETE FROM idempotency WHERE rowid <= (SELECT max(rowid) FROM idempotency) - ?').run(
            options.idempotencyLimit,
          );
        }
        this.keysSincePrune = (this.keysSincePrune + 1) % 1000;
      }
      return response;
    });
  }

  /**
   * Forms batches from the queue with `plan` until it fails (Atropos forms them all at once
   * and advances the step by that count). Returns how many were formed.
   */
  formBatches(plan: (queue: readonly StoredGroup[]) => BatchPlan | undefined): number {
    return this.transaction(() => {
      let formed = 0;
      const update = this.sql('UPDATE groups SET state = 2, batch_no = ?, pos = ? WHERE id = ?');
      for (;;) {
        const next = plan(this.queue);
        if (!next) break;
        const batchNo = this.run.nextBatchNo++;
        const groups: StoredGroup[] = [];
        next.take.forEach((index, position) => {
          const group = this.queue[index] as StoredGroup;
          update.run(batchNo, position, group.id);
          groups.push(group);
        });
        const remove = new Set(next.take);
        let replacement: { index: number; tail: StoredGroup } | undefined;
        if (next.split) {
          const { head, tail } = this.splitQueued(
            next.split.index,
            next.split.sequences,
            batchNo,
            next.take.length,
          );
          groups.push(head);
          replacement = { index: next.split.index, tail };
        }
        const rest: StoredGroup[] = [];
        this.queue.forEach((group, index) => {
          if (replacement?.index === index) rest.push(replacement.tail);
          else if (!remove.has(index)) rest.push(group);
        });
        this.queue = rest;
        this.formed.push({ batchNo, groups });
        formed++;
      }
      this.run.step += formed;
      return formed;
    });
  }

  // Cuts a queued group in two: the head joins the batch, the tail keeps the queue position.
  private splitQueued(
    index: number,
    sequences: number,
    batchNo: number,
    position: number,
  ): { head: StoredGroup; tail: StoredGroup } {
    const group = this.queue[index] as StoredGroup;
    const row = this.sql(
      'SELECT ord, encoding, suffix, payload, received_at AS receivedAt FROM groups JOIN payloads USING (id) WHERE id = ?',
    ).get(group.id) as StoredPayload & { ord: number; receivedAt: number | null };
    this.preserveLatest([group.id]);
    const [headText, tailText] = splitGroupText(groupText(row), sequences);
    const insert = this.sql(
      "INSERT INTO groups (id, ord, env_id, size, state, batch_no, pos, encoding, suffix, bytes, received_at, rest) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', ?, ?, ?)",
    );
    const insertPayload = this.sql('INSERT INTO payloads (id, payload) VALUES (?, ?)');
    const make = (
      content: string,
      size: number,
      state: number,
      batch: number | null,
      pos: number | null,
    ): StoredGroup => {
      const payload = Buffer.from(content);
      const id = this.run.nextId++;
      const rest = state === STATE_QUEUED;
      insert.run(
        id,
        row.ord,
        group.envId,
        size,
        state,
        batch,
        pos,
        payload.byteLength,
        row.receivedAt,
        rest ? 1 : null,
      );
      insertPayload.run(id, payload);
      this.storedGroups++;
      this.storedBytes += payload.byteLength;
      return { id, envId: group.envId, size, bytes: payload.byteLength, ...(rest ? { rest } : {}) };
    };
    const head = make(headText, sequences, STATE_FORMED, batchNo, position);
    const tail = make(tailText, group.size - sequences, STATE_QUEUED, null, null);
    this.sql('DELETE FROM groups WHERE id = ?').run(group.id);
    this.sql('DELETE FROM payloads WHERE id = ?').run(group.id);
    this.storedGroups--;
    this.storedBytes -= group.bytes;
    return { head, tail };
  }

  /** Reads the payloads of a formed batch, in batch order. */
  readBatch(batch: FormedBatch): StoredPayload[] {
    const rows = this.sql(
      'SELECT encoding, suffix, payload FROM groups JOIN payloads USING (id) WHERE batch_no = ? ORDER BY pos',
    ).all(batch.batchNo) as StoredPayload[];
    return rows;
  }

  /** The batch was delivered: its groups leave the store for good. */
  completeBatch(batch: FormedBatch): void {
    this.db.transaction(() => {
      this.preserveLatest(batch.groups.map((group) => group.id));
      this.sql('DELETE FROM payloads WHERE id IN (SELECT id FROM groups WHERE batch_no = ?)').run(
        batch.batchNo,
      );
      const result = this.sql('DELETE FROM groups WHERE batch_no = ?').run(batch.batchNo);
      this.sql('DELETE FROM delivered WHERE batch_no = ?').run(batch.batchNo);
      if (result.changes > 0) {
        for (const group of batch.groups) {
          this.storedGroups--;
          this.storedBytes -= group.bytes;
        }
      }
    })();
    this.syncCommitted();
    this.formed = this.formed.filter((item) => item !== batch);
  }

  /**
   * Records, in a one-row commit (a single page, tens of microseconds), that the batch is being
   * handed to a trainer; call it just before the last bytes of the /batch response go to the
   * kernel. Until `completeBatch` deletes its groups, a restart deletes them instead. The mark
   * comes before the bytes, not after, because writing the last bytes wakes the trainer, and the
   * scheduler may run the trainer (and whoever reacts to it) before this process commits again.
   * Not fsynced on its own, even with synchronous=full: a power loss before `completeBatch`
   * (which is fsynced) re-serves the batch rather than losing it.
   */
  markDelivered(batch: FormedBatch): void {
    this.sql('INSERT OR IGNORE INTO delivered (batch_no) VALUES (?)').run(batch.batchNo);
  }

  /** The last bytes of a marked batch never reached the trainer: it stays to be served again. */
  unmarkDelivered(batch: FormedBatch): void {
    this.sql('DELETE FROM delivered WHERE batch_no = ?').run(batch.batchNo);
  }

  /** Deletes the groups of batches marked delivered by a process that died before deleting them. */
  private removeDelivered(): void {
    const marked = this.sql('SELECT batch_no AS batchNo FROM delivered').all() as {
      batchNo: number;
    }[];
    if (marked.length === 0) return;
    this.db.transaction(() => {
      for (const { batchNo } of marked) {
        const ids = this.sql('SELECT id FROM groups WHERE batch_no = ?').all(batchNo) as {
          id: number;
        }[];
        this.preserveLatest(ids.map((row) => row.id));
        this.sql('DELETE FROM payloads WHERE id IN (SELECT id FROM groups WHERE batch_no = ?)').run(batchNo);
        this.sql('DELETE FROM groups WHERE batch_no = ?').run(batchNo);
      }
      this.sql('DELETE FROM delivered').run();
    })();
  }

  // /latest_example outlives the group it shows (Atropos keeps `latest` even after /reset_data).
  private preserveLatest(ids: number[]): void {
    const latestId = this.run.latestId;
    if (latestId === null || !ids.includes(latestId)) return;
    const row = this.sql(
      'SELECT encoding, suffix, payload FROM groups JOIN payloads USING (id) WHERE id = ?',
    ).get(latestId) as StoredPayload | undefined;
    if (!row) return;
    this.sql(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    ).run('latest', groupText(row));
    this.run.latestId = null;
    this.saveRun();
  }

  latestText(): string | undefined {
    if (this.run.latestId !== null) {
      const row = this.sql(
        'SELECT encoding, suffix, payload FROM groups JOIN payloads USING (id) WHERE id = ?',
      ).get(this.run.latestId) as StoredPayload | undefined;
      if (row) return groupText(row);
    }
    const meta = this.sql('SELECT value FROM meta WHERE key = ?').get('latest') as
      | { value: string }
      | undefined;
    return meta?.value;
  }

  /** `/reset_data`: drops all queued data and the run state except what Atropos keeps. */
  reset(): void {
    this.db.transaction(() => {
      const all = this.sql('SELECT id FROM groups').all() as { id: number }[];
      this.preserveLatest(all.map((row) => row.id));
      this.sql('DELETE FROM groups').run();
      this.sql('DELETE FROM payloads').run();
      this.sql('DELETE FROM delivered').run();
      const kept = this.run;
      this.run = {
        ...initialRun(),
        maxTokenLen: kept.maxTokenLen,
        checkpointDir: kept.checkpointDir,
        saveCheckpointInterval: kept.saveCheckpointInterval,
        latestId: kept.latestId,
        nextId: kept.nextId,
        nextBatchNo: kept.nextBatchNo,
      };
      this.saveRun();
    })();
    this.syncCommitted();
    this.queue = [];
    this.buffers.clear();
    this.formed = [];
    this.storedGroups = 0;
    this.storedBytes = 0;
  }

  /** Counts of what is stored, and the age of the oldest group. */
  summary(): StoreSummary {
    let buffered = 0;
    for (const list of this.buffers.values()) buffered += list.length;
    const oldest = this.sql('SELECT min(received_at) AS at FROM groups').get() as {
      at: number | null;
    };
    return {
      groups: this.storedGroups,
      queued: this.queue.length,
      buffered,
      formedBatches: this.formed.length,
      oldestReceivedAt: oldest.at,
    };
  }

  private ownerPath: string | undefined;

  close(): void {
    if (this.ownerPath !== undefined) rmSync(this.ownerPath, { force: true });
    this.ownerPath = undefined;
    if (this.db.open) this.db.close();
    if (this.walFd !== undefined && !this.syncRunning) closeSync(this.walFd);
    this.walFd = undefined;
  }
}
