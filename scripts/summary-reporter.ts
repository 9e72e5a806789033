// Prints one plain closing line ("N passed, N failed, N skipped") that any CI can read.
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      let moduleFailures = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') moduleFailures++;
        else skipped++;
      }
      // A file that failed outside its tests (import error, failing beforeAll) still counts as a failure.
      if (module.state() === 'failed' && moduleFailures === 0) moduleFailures = 1;
      failed += moduleFailures;
    }
    failed += unhandledErrors.length;
    process.stdout.write(`\nshears: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
