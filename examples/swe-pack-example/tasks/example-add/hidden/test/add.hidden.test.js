'use strict';
// Hidden test: put in place only in the grading container, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { add } = require('../add.js');

test('adds other numbers', () => {
  assert.equal(add(-4, 10), 6);
  assert.equal(add(7, 7), 14);
});
