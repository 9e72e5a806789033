'use strict';
// Hidden test: put in place only at grading time, never in the agent's sandbox.
const test = require('node:test');
const assert = require('node:assert/strict');
const { toCamelCase } = require('../src/case.js');

test('other separators', () => {
  assert.equal(toCamelCase('alpha_beta gamma'), 'alphaBetaGamma');
  assert.equal(toCamelCase('x__y  z-w'), 'xYZW');
});
