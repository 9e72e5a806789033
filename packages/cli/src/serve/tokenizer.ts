// The model's tokenizer that `serve` and `train` send every rollout to the trainer with (as token
// ids): loaded before anything starts, so a folder without one is refused first. Loading a
// tokenizer.json of a large vocabulary takes seconds; the workers of one process share it.
import { ConfigError, type TokenizerV1 } from '@shears/core';
import { createHfTokenizer } from '@shears/servers';

const tokenizerCache = new Map<string, TokenizerV1>();

/** The tokenizer in `path` (absolute: the plan's server.tokenizer). */
export function loadTokenizer(path: string): TokenizerV1 {
  const cached = tokenizerCache.get(path);
  if (cached) return cached;
  let tokenizer: TokenizerV1;
  try {
    tokenizer = createHfTokenizer({ dir: path });
  } catch (cause) {
    throw new ConfigError({
      message: `server.tokenizer: cannot load a tokenizer from ${path} (${(cause as Error).message}); point it at a folder with tokenizer.json and tokenizer_config.json`,
      issues: [{ path: 'server.tokenizer', message: 'tokenizer could not be loaded', value: path }],
      cause,
    });
  }
  tokenizerCache.set(path, tokenizer);
  return tokenizer;
}
