'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { add } = require('../add.js');

test('adds zero', () => {
  assert.equal(add(2, 0), 2);
});

test('adds two numbers', () => {
  assert.equal(add(2, 3), 5);
});
