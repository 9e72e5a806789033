import { describe, expect, it } from 'vitest';
import { FileToolError } from './file-tool-error.js';
import { MATCH_STRATEGIES } from './fuzzy-match.js';
import { PATCH_DESCRIPTION, replaceInContent } from './patch.js';

const source = [
  'def load_config(path):',
  '    with open(path) as handle:',
  '        return json.load(handle)',
  '',
  'def save_config(path, config):',
  '    with open(path, "w") as handle:',
  '        json.dump(config, handle)',
  '',
].join('\n');

function failure(run: () => unknown): FileToolError {
  try {
    run();
  } catch (error) {
    if (error instanceof FileToolError) return error;
    throw error;
  }
  throw new Error('expected a FileToolError');
}

describe('replaceInContent', () => {
  it('shows the closest sections when old_string is not found', () => {
    const error = failure(() =>
      replaceInContent(source, 'def load_confg(path):\n    with open(path) as fh:', 'x', false),
    );
    expect(error.message).toBe(
      'Could not find a match for old_string in the file\n\nDid you mean one of these sections?\n--- lines 1-2 ---\n     1|def load_config(path):\n     2|    with open(path) as handle:',
    );
    expect(error.extra).toBeUndefined();
  });

  it('gives the generic hint when nothing is close', () => {
    const error = failure(() => replaceInContent(source, 'class Unrelated:\n    pass', 'x', false));
    expect(error.message).toBe('Could not find a match for old_string in the file');
    expect(error.extra).toEqual({
      _hint:
        'old_string not found. Use read_file to verify the current content, or search_files to locate the text.',
    });
  });

  it('refuses empty and unchanged edits', () => {
    expect(failure(() => replaceInContent(source, '', 'x', false)).message).toBe(
      'old_string cannot be empty',
    );
    expect(failure(() => replaceInContent(source, 'json', 'json', false)).message).toMatch(/identical/);
  });

  it('re-indents the replacement when the match was found at another indentation', () => {
    const result = replaceInContent(
      source,
      'with open(path) as handle:\n    return json.load(handle)',
      'with open(path) as handle:\n    data = json.load(handle)\n    return data',
      false,
    );
    expect(result.strategy).not.toBe('exact');
    expect(result.content).toContain(
      '    with open(path) as handle:\n        data = json.load(handle)\n        return data\n',
    );
  });

  it('tells the model how many matching strategies there really are', () => {
    expect(MATCH_STRATEGIES).toHaveLength(8);
    expect(PATCH_DESCRIPTION).toContain('Uses fuzzy matching (8 strategies)');
  });
});
