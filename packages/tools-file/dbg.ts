import { silentLogger } from '@shears/core';
import { createFileTools } from './src/index.ts';
import { createTempSandbox } from './test/temp-sandbox.ts';

const sandbox = createTempSandbox();
await sandbox.exec(
  'mkdir -p proj/src && printf "hello\\nworld hello\\n" > proj/src/a.ts && printf "x hello\\n" > proj/b.ts && printf "hello\\n" > "proj/$(printf "caf\\351.txt")"',
);
const tools = new Map(createFileTools().map((t) => [t.name, t]));
const ctx = {
  sandbox,
  taskId: 't',
  rolloutId: 'r',
  signal: new AbortController().signal,
  logger: silentLogger,
  state: new Map(),
};
for (const args of [
  { pattern: 'hello', path: 'proj' },
  { pattern: '*.t*', target: 'files' },
  { pattern: 'hello', output_mode: 'count' },
  { pattern: 'hello', path: 'proj/b.ts' },
]) {
  const t = tools.get('search_files')!;
  console.log(JSON.stringify((await t.execute(t.inputSchema.parse(args), ctx)).data));
}
const w = tools.get('write_file')!;
console.log(
  JSON.stringify(await w.execute(w.inputSchema.parse({ path: 'x/y.txt', content: "it's\n" }), ctx)),
);
console.log((await sandbox.exec('cat x/y.txt; ls -a x ' + sandbox.tempDir)).stdout);
