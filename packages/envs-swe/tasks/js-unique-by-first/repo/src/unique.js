'use strict';

function uniqueBy(items, key) {
  const byKey = new Map();
  for (const item of items) byKey.set(item[key], item);
  return [...byKey.values()];
}

module.exports = { uniqueBy };
