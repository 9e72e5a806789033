'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseQuery } = require('../src/query.js');

test('plain pairs', () => {
  assert.deepEqual(parseQuery('?a=1&b=2'), { a: '1', b: '2' });
});

test('decodes plus and percent escapes', () => {
  assert.deepEqual(parseQuery('q=hello+world&lang=en%2Dgb'), { q: 'hello world', lang: 'en-gb' });
});

test('flag without value', () => {
  assert.deepEqual(parseQuery('debug'), { debug: '' });
});
