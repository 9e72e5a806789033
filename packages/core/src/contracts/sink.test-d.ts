// Type tests for the TrajectorySink contract (checked by `tsc`, not run): a sink with only `write`
// and `close` is a whole v1 sink, `open`, `flush` and the write receipt are optional additions.
import { describe, expectTypeOf, it } from 'vitest';
import type { ScoredGroupRecord } from '../schemas/group-record.js';
import type { SinkOpenOptions, SinkWriteReceipt, TrajectorySinkV1 } from './sink.js';

describe('TrajectorySinkV1', () => {
  it('needs only write and close; open, flush and the receipt are optional', () => {
    const minimal = {
      specificationVersion: 'v1' as const,
      id: 'minimal',
      async write(_group: ScoredGroupRecord) {},
      async close() {},
    };
    expectTypeOf(minimal).toExtend<TrajectorySinkV1>();
    expectTypeOf<TrajectorySinkV1['specificationVersion']>().toEqualTypeOf<'v1'>();
    // biome-ignore lint/suspicious/noConfusingVoidType: the contract's own return type
    expectTypeOf<ReturnType<TrajectorySinkV1['write']>>().toEqualTypeOf<Promise<void | SinkWriteReceipt>>();
  });

  it('a resumed run hands its sinks the groups it keeps', () => {
    expectTypeOf<NonNullable<SinkOpenOptions['resume']>['kept']>().toEqualTypeOf<
      readonly ScoredGroupRecord[]
    >();
  });
});
