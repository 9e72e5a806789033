'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { chunk } = require('../src/chunk.js');

test('splits evenly', () => {
  assert.deepEqual(chunk([1, 2, 3, 4], 2), [[1, 2], [3, 4]]);
});

test('keeps the remainder', () => {
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
});

test('rejects a bad size', () => {
  assert.throws(() => chunk([1], 0), RangeError);
});
