// The Env conformance suite from @shears/core/test, run on this pack as a pack author would.
import { describeEnvConformance } from '@shears/core/test';
import { answersDemoPolicy, createAnswersEnv } from '../src/index.js';

describeEnvConformance({
  name: 'answers',
  create: () => createAnswersEnv({ count: 2 }),
  policy: answersDemoPolicy(),
});
