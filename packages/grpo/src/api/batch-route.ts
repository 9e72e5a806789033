// GET /batch: lease the next formed batch, encode it, and hand it out so that a crash can
// neither lose nor (after the trainer has it) repeat it; see deliverBatch.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type EncodedChunks, encodeBatch, json } from './http-body.js';
import type { BatchLease, TrajectoryQueue } from './trajectory-queue.js';

export async function batch(
  queue: TrajectoryQueue,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const leased = queue.leaseBatch();
  if (leased.kind === 'unregistered')
    return json(
      request,
      response,
      '{"status":"error","message":"Trainer not registered. Call /register first.","batch":[]}',
    );
  if (leased.kind === 'none') return json(request, response, '{"batch":null}');
  const { lease } = leased;
  try {
    const encoded = await encodeBatch(request, await lease.groups());
    await deliverBatch(response, lease, encoded);
  } finally {
    lease.release();
  }
}

// Hand-out without a trainer acknowledgement (the Atropos protocol has none): everything but
// the last bytes is written and drained first; then a one-row commit marks the batch
// delivered and the last bytes are written in the same synchronous step. A crash before the
// mark leaves the batch to be served again (the trainer saw an incomplete response); a crash
// after the bytes are in the kernel finds the batch marked and deletes it at start. A kill -9
// after the mark but before the last bytes reach the kernel loses the batch: microseconds
// when the kernel takes them at once (unless the process is preempted in between), but when
// its send buffer is full they wait in the socket's buffer until the trainer has read enough
// (see docs/atropos-differences.md).
// The mark comes first because writing the last bytes wakes the trainer, and the scheduler
// may run it (and whatever reacts to it) before this process gets the CPU back.
// The mark is deliberately not fsynced (even with synchronous=full): after a power loss an
// unsynced mark re-serves the batch, while a synced one would delete a batch whose bytes may
// have died in the kernel's send buffer. The deletion after the flush is fsynced.
async function deliverBatch(
  response: ServerResponse,
  lease: BatchLease,
  encoded: EncodedChunks,
): Promise<void> {
  // The body but its last 16 bytes, then those: cut across the chunks.
  const head: Buffer[] = [];
  const tailParts: Buffer[] = [];
  let left = Math.max(0, encoded.length - 16);
  for (const chunk of encoded.chunks) {
    const taken = Math.min(left, chunk.length);
    if (taken > 0) head.push(taken === chunk.length ? chunk : chunk.subarray(0, taken));
    if (taken < chunk.length) tailParts.push(chunk.subarray(taken));
    left -= taken;
  }
  response.writeHead(200, encoded.headers);
  if (head.length > 0) {
    // Wait until everything but the tail has been handed to the kernel (the write callback),
    // not merely accepted into Node's buffer: then the tail written right after the mark
    // normally goes straight to the kernel, which delivers it even if this process dies.
    const flushed = await new Promise<boolean>((resolve) => {
      const onClose = () => resolve(false);
      response.once('close', onClose);
      // Corked: the chunks go to the kernel in writev calls, not one syscall each.
      response.cork();
      head.forEach((chunk, index) => {
        if (index < head.length - 1) response.write(chunk);
        else
          response.write(chunk, (error) => {
            response.off('close', onClose);
            resolve(!error);
          });
      });
      response.uncork();
    });
    if (!flushed) return; // the trainer went away: the batch stays for the next /batch
  }
  if (response.destroyed) return;
  const tail = tailParts.length === 1 ? (tailParts[0] as Buffer) : Buffer.concat(tailParts);
  if (!lease.current()) {
    response.end(tail); // a /reset_data removed it meanwhile
    return;
  }
  lease.markDelivered();
  response.end(tail);
  if ((response.socket?.writableLength ?? 1) === 0) {
    lease.complete();
    return;
  }
  // The kernel did not take the last bytes at once: delete after they are flushed, or unmark
  // the batch when the trainer goes away first.
  await new Promise<void>((resolve) => {
    let finished = false;
    response.once('finish', () => {
      finished = true;
      lease.complete();
      resolve();
    });
    response.once('close', () => {
      if (!finished) lease.unmarkDelivered();
      resolve();
    });
  });
}
