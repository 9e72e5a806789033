// The one seeded random source of the tests, suites and benches: xorshift32, so a failure
// reproduces from its seed and nothing needs a dependency (also in @shears/core/scripted).

/** A deterministic generator of numbers in [0, 1); seed 0 is taken as 1. */
export function createSeededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}
