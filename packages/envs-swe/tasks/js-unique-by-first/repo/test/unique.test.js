'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { uniqueBy } = require('../src/unique.js');

test('no duplicates', () => {
  assert.deepEqual(uniqueBy([{ id: 1 }, { id: 2 }], 'id'), [{ id: 1 }, { id: 2 }]);
});

test('keeps the first occurrence', () => {
  const items = [{ id: 1, v: 'a' }, { id: 2, v: 'b' }, { id: 1, v: 'c' }];
  assert.deepEqual(uniqueBy(items, 'id'), [{ id: 1, v: 'a' }, { id: 2, v: 'b' }]);
});
