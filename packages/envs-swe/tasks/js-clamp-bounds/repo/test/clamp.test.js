'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('inside the range', () => {
  assert.equal(clamp(5, 0, 10), 5);
});

test('below and above the range', () => {
  assert.equal(clamp(-5, 0, 10), 0);
  assert.equal(clamp(15, 0, 10), 10);
});

test('rejects inverted bounds', () => {
  assert.throws(() => clamp(1, 5, 0), RangeError);
});
