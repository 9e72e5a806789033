// The replay buffer on disk: high-scoring groups kept in a SQLite file so a restarted `serve` or
// `train` replays what the previous run kept. Same rules as createReplayBuffer (only scores
// strictly above `threshold`, at most `capacity`, the lowest-scoring entry makes room for a
// better one, sampling in proportion to score without replacement), with the payload (the wire
// group and its record) stored beside the score. Scores and row ids are held in memory; payloads
// are read from disk when sampled.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, InvalidArgumentError, ShearsError } from '@shears/core';
import type BetterSqlite3 from 'better-sqlite3';

export interface ReplayStoreSettings {
  /** SQLite file; its folder is created. */
  path: string;
  /** Entries kept at most. Default 1000. */
  capacity?: number;
  /** Only groups scoring strictly above this are kept. Default 0.7. */
  threshold?: number;
  random?: () => number;
}

export interface ReplayStoreEntry<TPayload> {
  /** The group this entry replays. */
  groupId: string;
  taskId: string;
  score: number;
  payload: TPayload;
}

export interface ReplayStore<TPayload> {
  readonly path: string;
  readonly size: number;
  /** Keeps the entry when its score passes the threshold (and beats the lowest when full); returns whether it was kept. */
  add(entry: ReplayStoreEntry<TPayload>): boolean;
  /** Up to `count` distinct entries, drawn with probability proportional to score. */
  sample(count: number): ReplayStoreEntry<TPayload>[];
  close(): void;
}

/** The replay file could not be opened or read. */
export class ReplayStoreError extends ShearsError {
  readonly path: string;
  constructor(path: string, message: string, cause?: unknown) {
    super(`replay store ${path}: ${message}`, { code: 'SHEARS_REPLAY_STORE', cause });
    this.path = path;
  }
}

export async function openReplayStore<TPayload>(
  settings: ReplayStoreSettings,
): Promise<ReplayStore<TPayload>> {
  const capacity = settings.capacity ?? 1000;
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new InvalidArgumentError({
      argument: 'capacity',
      value: capacity,
      message: `replay capacity must be a positive integer, got ${capacity}`,
    });
  const threshold = settings.threshold ?? 0.7;
  const random = settings.random ?? Math.random;
  let Database: typeof BetterSqlite3;
  try {
    Database = (await import('better-sqlite3')).default;
  } catch (error) {
    throw new ConfigError({
      message: `The replay store needs better-sqlite3 (install it next to @shears/grpo): ${(error as Error).message}`,
      cause: error,
    });
  }
  let db: BetterSqlite3.Database;
  try {
    mkdirSync(dirname(settings.path), { recursive: true });
    db = new Database(settings.path);
    db.pragma('journal_mode = WAL');
    db.exec(
      'CREATE TABLE IF NOT EXISTS replay (id INTEGER PRIMARY KEY AUTOINCREMENT, group_id TEXT NOT NULL, task_id TEXT NOT NULL, score REAL NOT NULL, payload TEXT NOT NULL)',
    );
  } catch (error) {
    throw new ReplayStoreError(settings.path, (error as Error).message, error);
  }
  const insert = db.prepare('INSERT INTO replay (group_id, task_id, score, payload) VALUES (?, ?, ?, ?)');
  const remove = db.prepare('DELETE FROM replay WHERE id = ?');
  const read = db.prepare<[number], { group_id: string; task_id: string; score: number; payload: string }>(
    'SELECT group_id, task_id, score, payload FROM replay WHERE id = ?',
  );
  // Rows kept by an earlier run with other settings: the best `capacity` above the threshold stay.
  let entries = db
    .prepare<[], { id: number; score: number }>('SELECT id, score FROM replay ORDER BY score DESC, id ASC')
    .all();
  const surplus = entries.filter((entry, index) => index >= capacity || !(entry.score > threshold));
  if (surplus.length > 0) {
    db.transaction(() => {
      for (const entry of surplus) remove.run(entry.id);
    })();
    const gone = new Set(surplus.map((entry) => entry.id));
    entries = entries.filter((entry) => !gone.has(entry.id));
  }
  let closed = false;
  return {
    path: settings.path,
    get size() {
      return entries.length;
    },
    add(entry) {
      if (closed) throw new ReplayStoreError(settings.path, 'add after close');
      if (!(entry.score > threshold)) return false;
      let lowest = -1;
      if (entries.length >= capacity) {
        lowest = 0;
        entries.forEach((candidate, index) => {
          if (candidate.score < entries[lowest]!.score) lowest = index;
        });
        if (entries[lowest]!.score >= entry.score) return false;
      }
      const payload = JSON.stringify(entry.payload);
      db.transaction(() => {
        if (lowest >= 0) {
          remove.run(entries[lowest]!.id);
          entries.splice(lowest, 1);
        }
        const result = insert.run(entry.groupId, entry.taskId, entry.score, payload);
        entries.push({ id: Number(result.lastInsertRowid), score: entry.score });
      })();
      return true;
    },
    sample(count) {
      const pool = [...entries];
      const out: ReplayStoreEntry<TPayload>[] = [];
      while (out.length < count && pool.length > 0) {
        const total = pool.reduce((sum, entry) => sum + Math.max(0, entry.score), 0);
        let pick = pool.length - 1;
        if (total <= 0) pick = Math.floor(random() * pool.length);
        else {
          let target = random() * total;
          for (let index = 0; index < pool.length; index++) {
            target -= Math.max(0, pool[index]!.score);
            if (target < 0) {
              pick = index;
              break;
            }
          }
        }
        const [chosen] = pool.splice(pick, 1);
        const row = read.get(chosen!.id);
        if (!row) continue;
        let payload: TPayload;
        try {
          payload = JSON.parse(row.payload) as TPayload;
        } catch (error) {
          throw new ReplayStoreError(settings.path, `entry ${chosen!.id} is not valid JSON`, error);
        }
        out.push({ groupId: row.group_id, taskId: row.task_id, score: row.score, payload });
      }
      return out;
    },
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}
