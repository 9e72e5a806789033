// The SSRF guard: a URL is fetched only if its scheme is http(s) and every address its host
// resolves to is public (or allowlisted). The guard returns the vetted address, and the
// fetcher connects to exactly that address, so a second DNS answer cannot slip in between the
// check and the connection (no DNS-rebinding gap). Redirects are vetted again, hop by hop.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { SsrfBlockedError, WebToolError } from './errors.js';
import { addressInCidr, classifyAddress } from './ip-address.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (injectable for tests). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => ({ address: answer.address, family: answer.family === 6 ? 6 : 4 }));
};

export interface SsrfGuardSettings {
  /** Refuse non-public addresses (default true). */
  enabled?: boolean;
  /**
   * Exceptions for tests and intranets: host names (`intranet.example`, `*.corp.example`),
   * addresses or CIDR ranges (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`).
   */
  allowlist?: readonly string[];
  resolver?: HostResolver;
}

export interface VettedTarget {
  url: URL;
  hostname: string;
  address: string;
  family: 4 | 6;
}

export interface SsrfGuard {
  vet(url: string | URL): Promise<VettedTarget>;
}

function hostAllowed(hostname: string, allowlist: readonly string[]): boolean {
  const host = hostname.toLowerCase();
  return allowlist.some((entry) => {
    const rule = entry.toLowerCase();
    if (rule.startsWith('*.')) return host.endsWith(rule.slice(1));
    return rule === host;
  });
}

function addressAllowed(address: string, allowlist: readonly string[]): boolean {
  return allowlist.some((entry) => isIP(entry.split('/')[0]!) !== 0 && addressInCidr(address, entry));
}

export function createSsrfGuard(settings: SsrfGuardSettings = {}): SsrfGuard {
  const enabled = settings.enabled ?? true;
  const allowlist = settings.allowlist ?? [];
  const resolver = settings.resolver ?? systemResolver;
  return {
    async vet(input) {
      let url: URL;
      try {
        url = typeof input === 'string' ? new URL(input) : input;
      } catch (cause) {
        throw new WebToolError(`Invalid URL: ${String(input)}`, { url: String(input), cause });
      }
      const shown = url.href;
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new SsrfBlockedError({
          url: shown,
          category: 'scheme',
          message: `Blocked: ${shown} uses the "${url.protocol.replace(/:$/, '')}" scheme; only http and https URLs can be fetched`,
        });
      }
      const hostname = url.hostname.replace(/^\[|\]$/g, '');
      let addresses: ResolvedAddress[];
      const literal = isIP(hostname);
      if (literal !== 0) addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
      else {
        try {
          addresses = await resolver(hostname);
        } catch (cause) {
          throw new WebToolError(`Could not resolve host ${hostname}: ${(cause as Error).message}`, {
            url: shown,
            cause,
          });
        }
        if (addresses.length === 0)
          throw new WebToolError(`Could not resolve host ${hostname}: no addresses`, { url: shown });
      }
      if (enabled && !hostAllowed(hostname, allowlist)) {
        // Every answer must be public: a host that resolves to one public and one private
        // address is refused, since the connection could be steered to either.
        for (const { address } of addresses) {
          const category = classifyAddress(address);
          if (category === 'public' || addressAllowed(address, allowlist)) continue;
          const via = literal !== 0 ? `${hostname} is` : `${hostname} resolves to ${address}, which is`;
          throw new SsrfBlockedError({
            url: shown,
            address,
            category,
            message: `Blocked: ${via} a ${category} address. Requests to private or internal network addresses are not allowed`,
          });
        }
      }
      const chosen = addresses[0]!;
      return { url, hostname, address: chosen.address, family: chosen.family };
    },
  };
}
