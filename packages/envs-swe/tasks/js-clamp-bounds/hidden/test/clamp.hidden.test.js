'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('other bounds', () => {
  assert.equal(clamp(-100, -7, 3), -7);
  assert.equal(clamp(42, -7, 3), 3);
  assert.equal(clamp(2.5, 1, 2), 2);
});
