'use strict';

function toCamelCase(text) {
  return text.toLowerCase().replace(/-([a-z0-9])/g, (_, letter) => letter.toUpperCase());
}

module.exports = { toCamelCase };
