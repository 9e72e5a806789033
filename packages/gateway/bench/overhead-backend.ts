// The overhead bench's backend process (topology `three_processes`): the scripted
// OpenAI-compatible server of @shears/core/test, answering every request with the reply given
// as argv[2] (JSON), as an inference server would from its own process; it also speaks the
// Responses and Messages APIs (bench/same-api.ts). It reports its URL once listening and, when
// asked, its CPU time.
import { createScriptedServer } from '@shears/core/test';
import { replyAnswer, sameApiRoutes } from './same-api.js';

const reply = JSON.parse(process.argv[2] ?? '{}');
const scripted = await createScriptedServer({
  policy: () => reply,
  record: false,
  model: 'scripted-model',
  routes: sameApiRoutes(replyAnswer(reply)),
});
process.on('message', (message: { type: 'cpu'; id: number } | { type: 'exit' }) => {
  if (message.type === 'cpu') {
    const used = process.cpuUsage();
    process.send?.({ type: 'cpu', id: message.id, cpuMicros: used.user + used.system });
  } else
    void scripted.close().then(() => {
      process.disconnect();
    });
});
process.send?.({ type: 'ready', url: scripted.url });
