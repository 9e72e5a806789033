// Numbers of Atropos `ScoredData` as pydantic v2 (lax mode) reads them and json.dumps writes
// them: every element of `tokens`, `masks`, `distill_token_ids` and `env_id` becomes a Python
// int, every element of `scores`, `advantages`, `ref_logprobs`, `inference_logprobs` and
// `distill_logprobs` a Python float (`1` → `1.0`, `1E-7` → `1e-07`). Beyond Atropos, values a
// trainer cannot use are refused: NaN and infinities (Atropos accepts them, then every /batch
// fails), token ids outside 0 … 2^31 − 1 (no vocabulary is larger; torch cannot hold a 70-digit
// id), mask entries other than -100 or a token id, floats beyond float32's range.

/** One FastAPI/pydantic validation error. */
export interface Issue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

/** The largest token id accepted (int32; every tokenizer's vocabulary fits). */
export const TOKEN_MAX = 2 ** 31 - 1;
/** The label of a position that is not trained. */
export const IGNORE_LABEL = -100;
/** The largest magnitude of a float field: float32's, what trainers convert to. */
export const FLOAT32_MAX = 3.4028234663852886e38;
const INT_LIMIT = 2 ** 63;

/** A short rendering of a bad input for an error message. */
export function preview(value: unknown): unknown {
  if (Array.isArray(value)) return value.length > 8 ? '[…]' : value;
  if (typeof value === 'string' && value.length > 200) return `${value.slice(0, 200)}…`;
  if (value !== null && typeof value === 'object') return '{…}';
  return value;
}

/** Python's repr of a float, which json.dumps writes: `1.0`, `-0.0`, `1e-05`, `1.5e+16`. */
export function pythonFloat(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  // toExponential() without digits gives the shortest round-trip digits, as repr does.
  const text = value.toExponential();
  const at = text.indexOf('e');
  const exponent = Number(text.slice(at + 1));
  const digits = text.slice(value < 0 ? 1 : 0, at).replace('.', '');
  const sign = value < 0 ? '-' : '';
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const magnitude = Math.abs(exponent);
    return `${sign}${body}e${exponent < 0 ? '-' : '+'}${magnitude < 10 ? '0' : ''}${magnitude}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole =
    digits.length > exponent + 1 ? digits.slice(0, exponent + 1) : digits.padEnd(exponent + 1, '0');
  return `${sign}${whole}.${digits.length > exponent + 1 ? digits.slice(exponent + 1) : '0'}`;
}

/** The decimal digits of an integral double (`-0` → `0`). */
function integerText(value: number): string {
  if (value === 0) return '0';
  return Number.isSafeInteger(value) ? String(value) : BigInt(value).toString();
}

const INT_STRING = /^[+-]?\d+(?:_\d+)*(?:\.0+)?$/;
const FLOAT_STRING =
  /^[+-]?(?:(?:\d+(?:_\d+)*)(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+(?:_\d+)*)?$/;
const NON_FINITE_STRING = /^[+-]?(?:inf|infinity|nan)$/i;

/** The canonical JSON text of one element, or pydantic's error for it (without `loc`). */
type Converted = { text: string } | { issue: Omit<Issue, 'loc'> };

// pydantic v2 lax mode, Python input (what FastAPI validates): one element of an int field.
export function toInt(value: unknown): Converted {
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      return {
        issue: { type: 'finite_number', msg: 'Input should be a finite number', input: String(value) },
      };
    if (!Number.isInteger(value))
      return {
        issue: {
          type: 'int_from_float',
          msg: 'Input should be a valid integer, got a number with a fractional part',
          input: value,
        },
      };
    if (Math.abs(value) >= INT_LIMIT)
      return {
        issue: {
          type: 'int_parsing_size',
          msg: 'Unable to parse input string as an integer, exceeded maximum size',
          input: value,
        },
      };
    return { text: integerText(value) };
  }
  if (typeof value === 'boolean') return { text: value ? '1' : '0' };
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (INT_STRING.test(trimmed)) {
      const point = trimmed.indexOf('.');
      return { text: BigInt((point < 0 ? trimmed : trimmed.slice(0, point)).replaceAll('_', '')).toString() };
    }
    return {
      issue: {
        type: 'int_parsing',
        msg: 'Input should be a valid integer, unable to parse string as an integer',
        input: preview(value),
      },
    };
  }
  return { issue: { type: 'int_type', msg: 'Input should be a valid integer', input: preview(value) } };
}

// The same for a float field. NaN, infinities and values beyond float32 are refused.
export function toFloat(value: unknown): Converted {
  let number: number;
  if (typeof value === 'number') number = value;
  else if (typeof value === 'boolean') number = value ? 1 : 0;
  else if (typeof value === 'string') {
    const trimmed = value.trim();
    if (NON_FINITE_STRING.test(trimmed)) number = Number.NaN;
    else if (FLOAT_STRING.test(trimmed)) number = Number(trimmed.replaceAll('_', ''));
    else
      return {
        issue: {
          type: 'float_parsing',
          msg: 'Input should be a valid number, unable to parse string as a number',
          input: preview(value),
        },
      };
  } else
    return { issue: { type: 'float_type', msg: 'Input should be a valid number', input: preview(value) } };
  if (!Number.isFinite(number))
    return {
      issue: {
        type: 'finite_number',
        msg: 'Input should be a finite number',
        input: typeof value === 'number' ? String(value) : value,
      },
    };
  if (Math.abs(number) > FLOAT32_MAX) return { issue: float32Issue(value) };
  return { text: pythonFloat(number) };
}

function float32Issue(input: unknown): Omit<Issue, 'loc'> {
  return {
    type: 'float32_range',
    msg: `Input should be a number within float32's range (magnitude at most ${FLOAT32_MAX})`,
    input: preview(input),
  };
}

/** One number as the client spelled it: JSON.parse has already lost `-0` and the digits past 2^53. */
export function fromLiteral(raw: string, integer: boolean): Converted {
  if (/^-?\d+$/.test(raw)) {
    if (integer) return { text: raw === '-0' ? '0' : raw };
    if (raw === '-0') return { text: '0.0' };
    const value = Number(raw);
    // Python's float() of an int too large for a double raises OverflowError: float_type.
    if (!Number.isFinite(value))
      return { issue: { type: 'float_type', msg: 'Input should be a valid number', input: preview(raw) } };
    if (Math.abs(value) > FLOAT32_MAX) return { issue: float32Issue(raw) };
    return { text: pythonFloat(value) };
  }
  return integer ? toInt(Number(raw)) : toFloat(Number(raw));
}

/** Which ids an int field holds: token ids, labels (a token id or -100), or a plain int. */
export type IdKind = 'token' | 'label' | 'int';

/** The range check of an id field's element, given its canonical integer text. */
export function idIssue(text: string, kind: IdKind): Omit<Issue, 'loc'> | undefined {
  if (kind === 'int') return undefined;
  // Canonical text: an optional '-' and digits without leading zeros.
  const negative = text.charCodeAt(0) === 45;
  if (negative) {
    if (kind === 'label' && text === '-100') return undefined;
    return kind === 'label'
      ? {
          type: 'mask_value',
          msg: 'Input should be -100 (not trained) or the token id at this position',
          input: preview(text.length > 20 ? text : Number(text)),
        }
      : {
          type: 'greater_than_equal',
          msg: 'Input should be greater than or equal to 0',
          input: Number(text),
        };
  }
  if (text.length > 10 || Number(text) > TOKEN_MAX)
    return {
      type: 'less_than_equal',
      msg: `Input should be less than or equal to ${TOKEN_MAX}`,
      input: text.length > 20 ? `${text.slice(0, 20)}…` : Number(text),
    };
  return undefined;
}
