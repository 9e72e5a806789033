'use strict';

function clamp(value, min, max) {
  if (min > max) throw new RangeError('min must not exceed max');
  if (value < min) return max;
  if (value > max) return min;
  return value;
}

module.exports = { clamp };
