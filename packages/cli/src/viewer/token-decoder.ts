// Token text for the viewer's token view: loads the model's tokenizer (a folder with
// tokenizer.json + tokenizer_config.json, or the tokenizer.json itself) and decodes single ids
// with special tokens kept, so the view shows `<|im_start|>`, `·the` and `↵` instead of bare ids.
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError } from '@shears/core';

type TokenDecoder = (id: number) => string;

export async function loadTokenDecoder(
  path: string,
  cwd: string,
  field = 'tokenizer',
): Promise<TokenDecoder> {
  const full = resolve(cwd, path);
  const dir = existsSync(full) && statSync(full).isDirectory() ? full : dirname(full);
  if (!existsSync(resolve(dir, 'tokenizer.json')))
    throw new ConfigError({
      message: `${field}: no tokenizer.json at "${path}" (give the tokenizer's folder or its tokenizer.json)`,
      issues: [{ path: field, message: 'no tokenizer.json there', value: path }],
    });
  const { createHfTokenizer } = await import('@shears/servers');
  const tokenizer = createHfTokenizer({ dir });
  return (id) => tokenizer.decode([id], { skipSpecialTokens: false });
}
