// Benchmark: HTML → markdown time per fixture page, and end-to-end web_extract latency against
// a local HTTP server (SSRF check, pinned connection, Readability, turndown). One JSON line per
// case. Run: pnpm -F @shears/tools-web bench
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '@shears/core';
import { createWebExtractTool, htmlToMarkdown } from '../src/index.js';

const N = Number(process.env.BENCH_N ?? 50);
const fixtures = ['article.html', 'docs.html', 'scripts-and-cookies.html'];
const stats = (samples: number[]) => {
  samples.sort((a, b) => a - b);
  const at = (q: number) =>
    Number(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(2));
  return { medianMs: at(0.5), p90Ms: at(0.9) };
};

for (const name of fixtures) {
  const html = readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), 'utf8');
  const samples: number[] = [];
  for (let index = 0; index < N; index++) {
    const started = performance.now();
    htmlToMarkdown(html, 'https://example.org/page');
    samples.push(performance.now() - started);
  }
  console.log(
    JSON.stringify({
      bench: 'tools-web',
      case: `htmlToMarkdown ${name}`,
      htmlBytes: html.length,
      n: N,
      ...stats(samples),
    }),
  );
}

const page = readFileSync(new URL('../test/fixtures/article.html', import.meta.url));
const server = createServer((_request, response) =>
  response.writeHead(200, { 'content-type': 'text/html' }).end(page),
);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const tool = createWebExtractTool({
  ssrf: { allowlist: ['127.0.0.1'] },
  minIntervalMsPerHost: 0,
  cacheTtlMs: 0,
});
const context = {
  sandbox: undefined as never,
  taskId: 'b',
  rolloutId: 'b',
  signal: new AbortController().signal,
  logger: silentLogger,
  state: new Map(),
};
const samples: number[] = [];
for (let index = 0; index < N; index++) {
  const started = performance.now();
  await tool.execute({ urls: [`${origin}/article?${index}`] }, context);
  samples.push(performance.now() - started);
}
console.log(
  JSON.stringify({
    bench: 'tools-web',
    case: 'web_extract end-to-end (local server, article)',
    n: N,
    ...stats(samples),
  }),
);
server.close();
