// The small request bodies of the trajectory API (/register, /register-env, /disconnect-env,
// /status-env) validated as Atropos's pydantic models do in lax mode: coerced values, or a 422
// naming each bad field.
import { detail } from './http-errors.js';

type FieldType = 'str' | 'int' | 'float' | 'float?';

export function validateModel(value: unknown, fields: Record<string, FieldType>): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw detail(422, [
      {
        type: 'model_attributes_type',
        loc: ['body'],
        msg: 'Input should be a valid dictionary or object to extract fields from',
        input: value,
      },
    ]);
  }
  const input = value as Record<string, unknown>;
  const issues: unknown[] = [];
  const output: Record<string, unknown> = {};
  for (const [name, type] of Object.entries(fields)) {
    const item = input[name];
    if (item === undefined) {
      if (type === 'float?') output[name] = null;
      else issues.push({ type: 'missing', loc: ['body', name], msg: 'Field required', input });
      continue;
    }
    if (type === 'str') {
      if (typeof item === 'string') output[name] = item;
      else
        issues.push({
          type: 'string_type',
          loc: ['body', name],
          msg: 'Input should be a valid string',
          input: item,
        });
    } else if (type === 'int') {
      const number =
        typeof item === 'number'
          ? item
          : typeof item === 'string' && /^\s*[-+]?\d+(?:_\d+)*(?:\.0+)?\s*$/.test(item)
            ? Number(item.trim().replace(/\.0+$/, '').replaceAll('_', ''))
            : typeof item === 'boolean'
              ? Number(item)
              : Number.NaN;
      if (Number.isInteger(number)) output[name] = number;
      else
        issues.push({
          type: typeof item === 'number' && Number.isFinite(item) ? 'int_from_float' : 'int_parsing',
          loc: ['body', name],
          msg:
            typeof item === 'number' && Number.isFinite(item)
              ? 'Input should be a valid integer, got a number with a fractional part'
              : 'Input should be a valid integer',
          input: item,
        });
    } else {
      if (item === null && type === 'float?') {
        output[name] = null;
        continue;
      }
      const number =
        typeof item === 'number'
          ? item
          : typeof item === 'string' && item.trim() !== ''
            ? Number(item)
            : typeof item === 'boolean'
              ? Number(item)
              : Number.NaN;
      if (Number.isFinite(number)) output[name] = number;
      else
        issues.push({
          type: 'float_parsing',
          loc: ['body', name],
          msg: 'Input should be a valid number',
          input: item,
        });
    }
  }
  if (issues.length > 0) throw detail(422, issues);
  return output;
}
