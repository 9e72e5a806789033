// The benchmark corpus (bench/corpus.ts) is written the way models write, not rendered by these
// parsers: every parser must read all of it, whole-text and streamed. The JSON formats must give
// back exactly the arguments written, whatever the layout, key order or escaping.
import { describe, expect, it } from 'vitest';
import { CORPUS_FORMATS, createCorpus } from '../bench/corpus.js';
import { getParser } from '../src/index.js';

const XML_FORMATS = new Set(['qwen3_coder', 'glm45']);

describe('model-written corpus', () => {
  for (const format of CORPUS_FORMATS) {
    it(`${format}: every call of 300 outputs, whole and streamed`, () => {
      const parser = getParser(format);
      const corpus = createCorpus(format, 300);
      const options = XML_FORMATS.has(format) ? { tools: corpus.tools } : {};
      for (const output of corpus.outputs) {
        const result = parser.parse(output.text, options);
        expect(result.issues, output.text).toEqual([]);
        expect(
          result.toolCalls.map((call) => call.name),
          output.text,
        ).toEqual(output.expected.map((call) => call.name));
        // XML values are typed and trimmed by the format's rules; JSON ones must come back as written.
        if (!XML_FORMATS.has(format))
          expect(
            result.toolCalls.map((call) => JSON.parse(call.arguments)),
            output.text,
          ).toEqual(output.expected.map((call) => call.args));
        const stream = parser.createStream(options);
        for (let at = 0; at < output.text.length; at += 13) stream.feed(output.text.slice(at, at + 13));
        expect(stream.finish()).toEqual(result);
      }
    });
  }
});
