// Secret redaction: every value read from the environment for the config (API keys and other
// `${VAR}` substitutions) is replaced before text reaches JSONL, HTML reports or logs.

export type Redactor = (text: string) => string;

export function createRedactor(secrets: readonly string[]): Redactor {
  const list = [...new Set(secrets.filter((secret) => secret.length >= 4))].sort(
    (a, b) => b.length - a.length,
  );
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const secret of list) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
    return out;
  };
}
