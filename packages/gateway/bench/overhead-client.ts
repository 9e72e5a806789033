// The overhead bench's client process (topology `three_processes`): it sends the bench's
// requests, to the backend directly or through the gateway (in the parent process), as a
// harness program would from its own process. The parent hands it one batch at a time over IPC
// (the mode, its bodies, one open session per loop) and gets back the samples and this
// process's CPU time; nothing of the IPC is inside a timed request.
import { type ModeSpec, requestLoop, type SessionAddress } from './overhead-requests.js';

interface Batch {
  type: 'batch';
  id: number;
  spec: ModeSpec;
  bodies: string[];
  loops: number;
  directBaseUrl: string;
  sessions: SessionAddress[];
}

const reply = (message: unknown) => process.send?.(message);

process.on('message', (message: Batch | { type: 'exit' }) => {
  if (message.type === 'exit') {
    process.disconnect();
    return;
  }
  void (async () => {
    const samples: number[] = [];
    const cpu = process.cpuUsage();
    try {
      for (let loop = 0; loop < message.loops; loop++) {
        const session = message.sessions[loop];
        await requestLoop(
          message.spec,
          message.bodies,
          message.spec.via === 'direct' || !session ? { directBaseUrl: message.directBaseUrl } : { session },
          samples,
        );
      }
      const used = process.cpuUsage(cpu);
      reply({ type: 'done', id: message.id, samples, cpuMicros: used.user + used.system });
    } catch (error) {
      reply({ type: 'failed', id: message.id, error: String(error) });
    }
  })();
});
reply({ type: 'ready' });
