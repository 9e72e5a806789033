'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { formatBytes } = require('../src/bytes.js');

test('small values', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.5 KB');
});

test('exact unit boundaries', () => {
  assert.equal(formatBytes(1024), '1.0 KB');
  assert.equal(formatBytes(1048576), '1.0 MB');
});
