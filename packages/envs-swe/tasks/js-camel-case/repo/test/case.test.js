'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { toCamelCase } = require('../src/case.js');

test('hyphens', () => {
  assert.equal(toCamelCase('foo-bar'), 'fooBar');
});

test('underscores and spaces', () => {
  assert.equal(toCamelCase('foo_bar-baz'), 'fooBarBaz');
  assert.equal(toCamelCase('hello big world'), 'helloBigWorld');
});
