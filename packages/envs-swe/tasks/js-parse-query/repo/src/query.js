'use strict';

function parseQuery(query) {
  const result = {};
  const text = query.startsWith('?') ? query.slice(1) : query;
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const index = pair.indexOf('=');
    const key = index < 0 ? pair : pair.slice(0, index);
    const value = index < 0 ? '' : pair.slice(index + 1);
    result[key] = value;
  }
  return result;
}

module.exports = { parseQuery };
