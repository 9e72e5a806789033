'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseQuery } = require('../src/query.js');

test('other escapes', () => {
  assert.deepEqual(parseQuery('na%20me=a+b%26c&x%3Dy=1'), { 'na me': 'a b&c', 'x=y': '1' });
});
