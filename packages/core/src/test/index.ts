// @shears/core/test: conformance suites for every contract, the scripted OpenAI-compatible
// HTTP server, and fixture helpers. Import only from tests.
export {};
