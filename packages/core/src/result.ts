// The result type returned by every `safe*` twin of a throwing parser.
import type { ShearsError } from './errors.js';

export type SafeResult<TValue, TError = ShearsError> =
  | { success: true; value: TValue }
  | { success: false; error: TError };

export function ok<TValue>(value: TValue): SafeResult<TValue, never> {
  return { success: true, value };
}

export function err<TError>(error: TError): SafeResult<never, TError> {
  return { success: false, error };
}
