// The model side of bench/env-rollouts.ts, in its own process so that its CPU is not counted as
// the env's: two scripted OpenAI-compatible servers (0 ms and BENCH_LATENCY_MS latency) playing
// the "count the words" policy. Turn 1 asks for words.txt (read_text); turn 2 answers with the number of
// words in what the tool returned. Prints one JSON line with both URLs, then serves until killed.
import { createScriptedServer, type ScriptedChatRequest } from '@shears/core/test';

const policy = (request: ScriptedChatRequest) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') {
    const text = typeof last.content === 'string' ? last.content : '';
    return { content: String(text.split(/\s+/).filter(Boolean).length) };
  }
  return { toolCalls: [{ name: 'read_text', arguments: { path: 'words.txt' } }] };
};

const latencies = [0, Number(process.env.BENCH_LATENCY_MS ?? 50)];
const servers = await Promise.all(
  latencies.map((latencyMs) => createScriptedServer({ policy, latencyMs, record: false })),
);
console.log(JSON.stringify({ urls: Object.fromEntries(latencies.map((ms, i) => [ms, servers[i]!.url])) }));
process.on('SIGTERM', () => {
  void Promise.all(servers.map((server) => server.close())).then(() => process.exit(0));
});
