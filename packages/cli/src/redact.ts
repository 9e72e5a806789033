// Secret redaction for everything the CLI writes: JSONL, groups posted to the trajectory API,
// HTML reports, summaries, logs, progress and error messages.
//
// Which values are secrets is decided by the config field that holds them (`api_key`,
// `auth_token`, `password`, …, the password and secret query parameters of URLs, and a value read
// from a secret-named environment variable such as `${GITHUB_TOKEN}`), never by where a value came
// from: `base_url: ${BASE_URL}` stays visible. The strong values of the process's secret-named
// environment variables are secrets too, used by the config or not: shears and its plugins read
// some keys from the environment directly (WANDB_API_KEY, web_search providers' keys). Structured output is redacted value by value, so
// JSON stays valid and numbers, booleans and keys are never touched. A secret is replaced wherever
// it occurs only when it is strong enough that it cannot be ordinary text; a weak one (`api_key:
// test`) would rewrite words of prompts and transcripts ("a careful [redacted] assistant"), so it
// is not replaced at all and the run warns about it. Free text also loses the userinfo of every URL.

import { isSecretField } from '@shears/core/internal';

const REDACTED = '[redacted]';

/** A secret and the config field it came from. */
export interface SecretField {
  path: string;
  value: string;
}

export interface Redactor {
  /** Free text (logs, progress, errors): strong secrets and URL userinfo replaced. */
  (text: string): string;
  /** A copy of structured data with strong secrets replaced inside its strings; JSON stays valid. */
  value<T>(value: T): T;
  /** Secrets too weak to be replaced without rewriting ordinary text; warn about them. */
  readonly weak: readonly SecretField[];
}

/** Environment variables whose values are secrets wherever the config uses them. */
const SECRET_VARIABLE = /(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|PRIVATE_?KEY|AUTH)$/i;

/**
 * Strong: long or varied enough that it cannot be a word of ordinary text, so replacing it
 * inside any string is safe. Real API keys and tokens always are.
 */
export function isStrongSecret(value: string): boolean {
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((pattern) => pattern.test(value)).length;
  return value.length >= 16 || (value.length >= 12 && classes >= 2) || (value.length >= 8 && classes >= 3);
}

/** The secrets in a URL: the password of its userinfo, secret-named query parameters. */
function urlSecrets(text: string, path: string, out: SecretField[]): void {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return;
  }
  if (url.password) out.push({ path: `${path} (URL password)`, value: decodeURIComponent(url.password) });
  else if (url.username) out.push({ path: `${path} (URL user)`, value: decodeURIComponent(url.username) });
  for (const [name, value] of url.searchParams)
    if (value && (isSecretField(name) || /^(key|sig|code)$/i.test(name)))
      out.push({ path: `${path} (URL parameter ${name})`, value });
}

/**
 * Every secret in a loaded config: string values of secret-named fields at any depth (settings
 * included), URL passwords and secret query parameters, values of secret-named environment
 * variables (those the config refers to, and the strong ones it does not), and the resolved
 * server API key.
 */
export function collectSecrets(
  config: unknown,
  options: { apiKey?: string; environment?: Record<string, string | undefined> } = {},
): SecretField[] {
  const found: SecretField[] = [];
  const strings: Array<{ path: string; value: string }> = [];
  const walk = (value: unknown, path: string) => {
    if (typeof value === 'string') {
      strings.push({ path, value });
      const key = path.slice(path.lastIndexOf('.') + 1).replace(/\[\d+\]$/, '');
      if (isSecretField(key) && value !== '') {
        found.push({ path, value });
        // `Authorization: Bearer <token>`: the token alone is the secret too.
        const credential = /^(?:bearer|basic|token|bot)\s+(\S+)$/i.exec(value)?.[1];
        if (credential) found.push({ path: `${path} (credential)`, value: credential });
      } else urlSecrets(value, path, found);
    } else if (Array.isArray(value)) {
      for (const [index, entry] of value.entries()) walk(entry, `${path}[${index}]`);
    } else if (value && typeof value === 'object')
      for (const [key, entry] of Object.entries(value)) walk(entry, path ? `${path}.${key}` : key);
  };
  walk(config, '');
  if (options.apiKey) found.push({ path: 'server.api_key', value: options.apiKey });
  for (const [name, value] of Object.entries(options.environment ?? {})) {
    if (!value || value.length < 4 || !SECRET_VARIABLE.test(name)) continue;
    const use = strings.find((entry) => entry.value.includes(value));
    if (use) found.push({ path: `${use.path} (\${${name}})`, value });
    // Keys read from the environment without the config naming them (WANDB_API_KEY, a
    // web_search provider's BRAVE_API_KEY, a plugin's own): secrets too. Only strong ones, so
    // that a short value of a variable the run never uses neither rewrites text nor warns.
    else if (isStrongSecret(value)) found.push({ path: `$${name} (environment)`, value });
  }
  const seen = new Set<string>();
  return found.filter((secret) => {
    if (secret.value.length === 0 || seen.has(secret.value)) return false;
    seen.add(secret.value);
    return true;
  });
}

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"<>]+@/gi;

export function createRedactor(secrets: readonly (string | SecretField)[]): Redactor {
  const fields = secrets.map((secret) =>
    typeof secret === 'string' ? { path: '(secret)', value: secret } : secret,
  );
  const strong = [
    ...new Set(fields.filter((field) => isStrongSecret(field.value)).map((field) => field.value)),
  ]
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b.length - a.length);
  const weak = fields.filter((field) => field.value !== '' && !isStrongSecret(field.value));
  const replaceSecrets = (text: string): string => {
    let out = text;
    for (const secret of strong) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  };
  const text = (input: string): string => replaceSecrets(input).replace(URL_USERINFO, `$1${REDACTED}@`);
  const value = <T>(input: T): T => {
    if (strong.length === 0) return input;
    const walk = (item: unknown): unknown => {
      if (typeof item === 'string') return replaceSecrets(item);
      if (Array.isArray(item)) return item.map(walk);
      if (item === null || typeof item !== 'object' || ArrayBuffer.isView(item) || item instanceof Date)
        return item;
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(item)) out[key] = walk(inner);
      return out;
    };
    return walk(input) as T;
  };
  return Object.assign(text, { value, weak });
}

/** Text of a warning naming the secrets that cannot be redacted from output. */
export function weakSecretsWarning(redactor: Redactor): string | undefined {
  if (redactor.weak.length === 0) return undefined;
  const names = redactor.weak.map((field) => `${field.path} (${field.value.length} characters)`).join(', ');
  return `${names}: too short to tell from ordinary text, so ${redactor.weak.length > 1 ? 'they are' : 'it is'} not redacted from output (replacing it would rewrite prompts and transcripts); a real key is longer`;
}
