'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { uniqueBy } = require('../src/unique.js');

test('first of each key, other keys', () => {
  const items = [
    { name: 'b', n: 1 },
    { name: 'a', n: 2 },
    { name: 'b', n: 3 },
    { name: 'a', n: 4 },
    { name: 'c', n: 5 },
  ];
  assert.deepEqual(uniqueBy(items, 'name'), [
    { name: 'b', n: 1 },
    { name: 'a', n: 2 },
    { name: 'c', n: 5 },
  ]);
});
