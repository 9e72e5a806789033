// @shears/tools-web: web_search over several providers and web_extract (fetch → readable
// markdown) behind an SSRF guard.

export { SsrfBlockedError, WebToolError } from './errors.js';
export type { ExtractedPage } from './html-to-markdown.js';
export { htmlToMarkdown } from './html-to-markdown.js';
export type { AddressCategory } from './ip-address.js';
export { addressInCidr, classifyAddress } from './ip-address.js';
export { default, default as plugin } from './plugin.js';
export type { HostRateLimiter } from './rate-limit.js';
export { createHostRateLimiter } from './rate-limit.js';
export type { FetchedPage, SafeFetchOptions } from './safe-fetch.js';
export { safeFetch } from './safe-fetch.js';
export type { SearchHit, SearchProvider, SearchRequestContext } from './search-providers.js';
export {
  braveProvider,
  exaProvider,
  firecrawlProvider,
  SEARCH_PROVIDERS,
  searxngProvider,
  selectSearchProvider,
  tavilyProvider,
} from './search-providers.js';
export {
  parseWebExtractSettings,
  parseWebSearchSettings,
  safeParseWebExtractSettings,
  safeParseWebSearchSettings,
  webExtractSettingsSchema,
  webSearchSettingsSchema,
} from './settings.js';
export type {
  HostResolver,
  ResolvedAddress,
  SsrfGuard,
  SsrfGuardSettings,
  VettedTarget,
} from './ssrf-guard.js';
export { createSsrfGuard, systemResolver } from './ssrf-guard.js';
export type { ExtractResult, WebExtractArgs, WebExtractSettings } from './web-extract.js';
export {
  bodyToMarkdown,
  createWebExtractTool,
  webExtractInputSchema,
  webExtractJsonSchema,
} from './web-extract.js';
export type { WebSearchArgs, WebSearchSettings } from './web-search.js';
export { createWebSearchTool, webSearchInputSchema, webSearchJsonSchema } from './web-search.js';
