// Child process for the crash test: posts `count` groups (4 sequences, gzip, one Idempotency-Key
// each) to the trajectory API, retrying through server crashes, and prints `ack <id>` for every
// group the server acknowledged with 200.
import { rawRequest } from './http.js';

const [url = '', countText = '0'] = process.argv.slice(2);
const count = Number(countText);

for (let id = 0; id < count; id++) {
  const body = {
    tokens: Array.from({ length: 4 }, (_, index) => [id, index, 1, 2, 3]),
    masks: Array.from({ length: 4 }, (_, index) => [-100, index, 1, 2, 3]),
    scores: [0, 0.25, 0.5, 1],
    group_overrides: { id },
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await rawRequest(url, '/scored_data', {
        body,
        gzip: true,
        headers: { 'idempotency-key': `writer-${id}` },
      });
      if (response.status === 200) {
        process.stdout.write(`ack ${id}\n`);
        break;
      }
    } catch {
      // Server down (killed): retry below.
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, 10 * 2 ** Math.min(attempt, 5))));
  }
}
process.stdout.write('done\n');
