// The bundled demo tasks: small shell and file jobs, each prepared by setup commands and checked
// by a verifier command that runs in the rollout's own sandbox. The `solution` and `mistake`
// plans drive the scripted demo policy (a stand-in for a model; see demo-policy.ts).

export interface DemoTask {
  id: string;
  prompt: string;
  /** Shell commands run in the fresh sandbox before the agent starts. */
  setup: string[];
  /** Exit code 0 means solved. */
  verify: string;
  /** The file the task asks for; its mere existence earns partial credit. */
  target: string;
  /** Commands of a correct solution; `{{last}}` is replaced by the previous command's output. */
  solution: string[];
  /** Commands of a plausible wrong attempt. */
  mistake: string[];
}

export const DEMO_TASKS: readonly DemoTask[] = [
  {
    id: 'hello-file',
    prompt:
      'Create a file named hello.txt in the current directory containing exactly the line: hello shears',
    setup: [],
    verify: `test "$(cat hello.txt)" = "hello shears"`,
    target: 'hello.txt',
    solution: [`echo 'hello shears' > hello.txt`],
    mistake: [`echo 'Hello Shears!' > hello.txt`],
  },
  {
    id: 'count-lines',
    prompt: 'The file data.txt has some lines. Count them and write only the number to answer.txt.',
    setup: [`printf 'alpha\\nbeta\\ngamma\\ndelta\\nepsilon\\nzeta\\neta\\n' > data.txt`],
    verify: `test "$(tr -d ' \\n' < answer.txt)" = "7"`,
    target: 'answer.txt',
    solution: ['wc -l < data.txt', `echo {{last}} > answer.txt`],
    mistake: ['wc -l data.txt > answer.txt'],
  },
  {
    id: 'sum-numbers',
    prompt: 'numbers.txt holds one integer per line. Write their sum (just the number) to answer.txt.',
    setup: [`printf '12\\n30\\n-5\\n8\\n' > numbers.txt`],
    verify: `test "$(tr -d ' \\n' < answer.txt)" = "45"`,
    target: 'answer.txt',
    solution: [`awk '{s+=$1} END {print s}' numbers.txt > answer.txt`],
    mistake: [`head -n 1 numbers.txt > answer.txt`],
  },
  {
    id: 'make-tree',
    prompt: 'Create the directory out/logs and an empty file out/logs/.keep inside it.',
    setup: [],
    verify: 'test -d out/logs && test -f out/logs/.keep && test ! -s out/logs/.keep',
    target: 'out/logs',
    solution: ['mkdir -p out/logs && touch out/logs/.keep'],
    mistake: ['mkdir -p out/log'],
  },
  {
    id: 'uppercase',
    prompt: 'Convert the contents of words.txt to upper case and write the result to upper.txt.',
    setup: [`printf 'red\\ngreen\\nblue\\n' > words.txt`],
    verify: `test "$(cat upper.txt)" = "$(printf 'RED\\nGREEN\\nBLUE')"`,
    target: 'upper.txt',
    solution: [`tr '[:lower:]' '[:upper:]' < words.txt > upper.txt`],
    mistake: [`cp words.txt upper.txt`],
  },
  {
    id: 'sort-names',
    prompt: 'Sort the lines of names.txt alphabetically and write them to sorted.txt.',
    setup: [`printf 'mallory\\nalice\\ntrent\\nbob\\n' > names.txt`],
    verify: `test "$(cat sorted.txt)" = "$(printf 'alice\\nbob\\nmallory\\ntrent')"`,
    target: 'sorted.txt',
    solution: ['sort names.txt > sorted.txt'],
    mistake: ['sort -r names.txt > sorted.txt'],
  },
  {
    id: 'find-word',
    prompt:
      'One file in the docs/ directory mentions "banana". Write that file\'s name (without the directory) to answer.txt.',
    setup: [
      'mkdir -p docs',
      `echo 'apples and pears' > docs/a.md`,
      `echo 'a banana split' > docs/b.md`,
      `echo 'cherries' > docs/c.md`,
    ],
    verify: `test "$(tr -d ' \\n' < answer.txt)" = "b.md"`,
    target: 'answer.txt',
    solution: ['grep -l banana docs/*', `basename {{last}} > answer.txt`],
    mistake: ['ls docs | head -n 1 > answer.txt'],
  },
  {
    id: 'script-42',
    prompt: 'Write an executable shell script run.sh that prints 42 when run as ./run.sh.',
    setup: [],
    verify: `test "$(./run.sh)" = "42"`,
    target: 'run.sh',
    solution: [`printf '#!/bin/sh\\necho 42\\n' > run.sh && chmod +x run.sh`],
    mistake: [`printf 'echo 42\\n' > run.sh`],
  },
];
