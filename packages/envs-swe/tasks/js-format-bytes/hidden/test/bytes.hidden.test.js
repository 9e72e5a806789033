'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { formatBytes } = require('../src/bytes.js');

test('other boundaries', () => {
  assert.equal(formatBytes(1073741824), '1.0 GB');
  assert.equal(formatBytes(2048), '2.0 KB');
});
