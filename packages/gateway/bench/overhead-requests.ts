// Shared by the overhead bench and its client process (bench/overhead-client.ts): one timed
// request loop (the 8 requests of a tool loop, the history growing), run the same way whether
// the client shares the gateway's process or has its own.
export type Api = 'chat' | 'responses' | 'messages';

/** One mode of the overhead bench: which API, streamed or not, and what answers it. */
export interface ModeSpec {
  name: string;
  api: Api;
  stream: boolean;
  /** `direct`: the scripted backend itself; `gateway`: the gateway in front of it; `instant`: the gateway in front of an in-process server that answers at once; `proxy`: a bare pass-through proxy in front of it (bench/bare-proxy.ts). */
  via: 'direct' | 'gateway' | 'instant' | 'proxy';
}

/** What a gateway session hands a harness: its base URLs and key. */
export interface SessionAddress {
  baseUrl: string;
  openaiBaseUrl: string;
  apiKey: string;
}

async function send(url: string, body: string, headers: Record<string, string>): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  await response.arrayBuffer();
}

/** Sends `bodies` in order (one tool loop), pushing each request's wall-clock time to `samples`. */
export async function requestLoop(
  spec: ModeSpec,
  bodies: readonly string[],
  target: { directBaseUrl: string } | { session: SessionAddress },
  samples: number[],
): Promise<void> {
  for (const body of bodies) {
    const start = performance.now();
    if ('directBaseUrl' in target)
      await send(
        `${target.directBaseUrl}/${spec.api === 'chat' ? 'chat/completions' : spec.api}`,
        body,
        spec.api === 'messages' ? { 'anthropic-version': '2023-06-01' } : {},
      );
    else if (spec.api === 'messages')
      await send(`${target.session.baseUrl}/v1/messages`, body, {
        'x-api-key': target.session.apiKey,
        'anthropic-version': '2023-06-01',
      });
    else
      await send(
        `${target.session.openaiBaseUrl}/${spec.api === 'responses' ? 'responses' : 'chat/completions'}`,
        body,
        { authorization: `Bearer ${target.session.apiKey}` },
      );
    samples.push(performance.now() - start);
  }
}
