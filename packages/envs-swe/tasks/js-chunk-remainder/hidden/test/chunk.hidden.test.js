'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { chunk } = require('../src/chunk.js');

test('remainder of other sizes', () => {
  assert.deepEqual(chunk(['a', 'b', 'c', 'd', 'e', 'f', 'g'], 3), [['a', 'b', 'c'], ['d', 'e', 'f'], ['g']]);
  assert.deepEqual(chunk([9, 8], 5), [[9, 8]]);
});
