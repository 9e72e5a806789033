// The shears config file: one YAML or JSON document, validated by this zod schema. Field names
// are snake_case so Atropos users find what they know (`--env.group_size 8`). Every section has
// defaults, so `shears process --env demo` needs no file at all.
import { z } from 'zod';

const settingsSchema = z.record(z.string(), z.unknown()).describe('Settings passed to the plugin factory');

const commandRule = z
  .string()
  .trim()
  .min(1)
  .refine((rule) => !rule.split(/\s+/)[0]!.includes('*'), {
    message:
      'a command rule is a command name with optional leading arguments (e.g. "git push"); no wildcards',
  });

const actionPolicyConfigSchema = z
  .strictObject({
    commands: z
      .strictObject({
        allow: z
          .array(commandRule)
          .optional()
          .describe('When set, every command a line runs must match one of these ("ls", "git status")'),
        deny: z
          .array(commandRule)
          .optional()
          .describe('Commands refused wherever they appear in a line (pipelines, sh -c, xargs, sudo, ...)'),
        allow_dynamic: z
          .boolean()
          .optional()
          .describe(
            'Allow what the parser cannot see into ($cmd, eval, arithmetic on variables, PATH/LD_PRELOAD assignments, shells reading stdin, options that run commands); refused by default',
          ),
      })
      .optional(),
    tools: z
      .strictObject({
        allow: z.array(z.string().min(1)).optional().describe('When set, only these tools may be called'),
        deny: z.array(z.string().min(1)).optional().describe('Tools that may not be called'),
      })
      .optional(),
    command_arguments: z
      .record(z.string(), z.string())
      .optional()
      .describe('Which argument of which tool holds a shell command (default: { terminal: command })'),
  })
  .describe(
    'Allow/deny lists checked before each tool call; a refusal goes back to the model as the result and is counted in the trajectory (policyRefusals)',
  );

export const envConfigSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Environment id from a loaded plugin (built in: demo, tasks, swe, harness); required by the commands that run an env (`--env` sets it)',
      ),
    group_size: z.int().min(1).max(1024).default(4).describe('Rollouts per group (G in GRPO)'),
    max_turns: z
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe("Agent turns per rollout (default: the env's own budget, else 30)"),
    seed: z.int().default(0).describe('Seed for the env and the demo policy'),
    max_token_length: z
      .int()
      .min(1)
      .default(32_768)
      .describe(
        "Longest token sequence of one rollout: sent to the trajectory API when `serve`/`train` register (Atropos' max_token_length); a group with a longer sequence is not sent",
      ),
    settings: settingsSchema.default({}),
    action_policy: actionPolicyConfigSchema.optional(),
    tools: z
      .array(
        z.union([
          z.string().min(1),
          z.strictObject({
            id: z.string().min(1).describe('A tool id or a toolset name'),
            settings: settingsSchema
              .default({})
              .describe("The tool's settings (each tool of a toolset gets them)"),
          }),
        ]),
      )
      .optional()
      .describe(
        "Tools from loaded plugins added to the env's own: a tool id (web_search), a toolset name (web: every tool in it), or { id, settings }",
      ),
    toolsets: z
      .strictObject({
        enabled: z
          .array(z.string().min(1))
          .optional()
          .describe(
            "Toolsets offered to the model (as the loaded plugins declare them: terminal, file, web, search, debugging, a third-party pack's own; or all); tools without a toolset (the env's own) are always offered; default: every tool; leaving no tool is an error",
          ),
        disabled: z
          .array(z.string().min(1))
          .optional()
          .describe('Toolsets removed last, also from enabled and sampled ones'),
        distribution: z
          .string()
          .min(1)
          .optional()
          .describe(
            'Toolset distribution sampled once per group (default, development, minimal, terminal_only, terminal_web, science); takes precedence over enabled',
          ),
      })
      .optional()
      .describe("hermes-agent's toolsets (§9): which of the env's tools a group is offered"),
  })
  .describe('The environment that produces tasks and rewards');

export const serverConfigSchema = z
  .strictObject({
    provider: z
      .string()
      .min(1)
      .default('scripted')
      .describe(
        'Server id: "scripted" (the bundled demo policy, no key needed) or "openai" (any OpenAI-compatible endpoint)',
      ),
    base_url: z.url().optional().describe('Endpoint base URL ending in /v1'),
    model: z.string().min(1).optional().describe('Model name sent to the server'),
    api_key: z
      .string()
      .optional()
      .describe('API key; write "${OPENAI_API_KEY}" to read it from the environment'),
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe('Name of the environment variable holding the API key'),
    temperature: z.number().min(0).max(2).optional(),
    max_tokens: z.int().min(1).optional(),
    timeout_ms: z.int().min(1).optional(),
    tokenizer: z
      .string()
      .optional()
      .describe(
        "Folder with the model's tokenizer.json and tokenizer_config.json (token data for `shears serve`/`train`, vllm/sglang servers; checked by `shears doctor`)",
      ),
    tool_parser: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Parser (e.g. hermes, qwen3_coder, mistral) that reads tool calls from the completion text whenever the server returns none; for servers started without their own tool parser',
      ),
    fallback_parser: z
      .string()
      .min(1)
      .default('hermes')
      .describe(
        'hermes-agent\'s fallback: with no native tool calls and "<tool_call>" in the text, parse it with this parser; "none" turns it off; ignored when tool_parser is set',
      ),
    settings: settingsSchema.default({}),
  })
  .describe('The inference server the agent talks to');

export const sandboxConfigSchema = z
  .strictObject({
    provider: z
      .string()
      .min(1)
      .optional()
      .describe("Sandbox provider id: local, docker, ssh (default: the env's preferred backend, else local)"),
    image: z.string().optional(),
    ssh_targets: z
      .unknown()
      .refine((value) => value === undefined, {
        message:
          'removed: nothing used it; the ssh sandbox connects to sandbox.settings.host / port / username (which `shears doctor` checks), so delete sandbox.ssh_targets',
      })
      .optional()
      .describe('Removed; use sandbox.settings.host / port of the ssh sandbox'),
    settings: settingsSchema.default({}),
  })
  .describe('Where rollouts run their tools');

/** The model server behind a judge (snake_case, like `server`). */
const judgeServerConfigSchema = z
  .strictObject({
    provider: z
      .string()
      .min(1)
      .describe(
        'Server id of the judge model: "openai" (any OpenAI-compatible endpoint), "openrouter", "vllm", ...',
      ),
    base_url: z.url().optional().describe('Endpoint base URL ending in /v1'),
    model: z.string().min(1).describe('Model name sent to the judge server'),
    api_key: z
      .string()
      .optional()
      .describe('API key of the judge server; write "${JUDGE_API_KEY}" to read it from the environment'),
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe('Name of the environment variable holding the judge API key'),
    timeout_ms: z.int().min(1).optional(),
    settings: settingsSchema.default({}),
  })
  .describe("The judge's model server (for a panel: of every member that sets no server of its own)");

const judgeWeight = z
  .number()
  .min(0)
  .max(1)
  .default(1)
  .describe(
    'Share of the verdict in the reward: (1 - weight) × env reward + weight × judge score; 1 (default) replaces the env reward, 0 records the verdict without rewarding it',
  );

const judgeConfigSchema = z
  .strictObject({
    id: z.string().min(1).describe('Judge id from a loaded plugin: rubric, panel (jury) from @shears/judges'),
    weight: judgeWeight,
    server: judgeServerConfigSchema.optional(),
    settings: settingsSchema
      .default({})
      .describe(
        'Settings of the judge (camelCase, as @shears/judges documents them: rubric, timeoutMs, judges, injection, ...)',
      ),
  })
  .describe(
    "An LLM judge scoring every finished rollout in the rollout's reward step; a failed verdict makes the rollout a judge_failure (retried, never a 0)",
  );

const groupJudgeConfigSchema = z
  .strictObject({
    id: z
      .string()
      .min(1)
      .describe('Group judge id from a loaded plugin: group (listwise) from @shears/judges'),
    weight: judgeWeight,
    server: judgeServerConfigSchema.optional(),
    settings: settingsSchema
      .default({})
      .describe('Settings of the group judge (camelCase: criteria, rounds, timeoutMs, injection, ...)'),
  })
  .describe(
    "A listwise judge scoring each group's scored rollouts together in one call once they are done; a failed verdict makes its rollout a judge_failure",
  );

const advantageEstimatorSchema = z.enum(['grpo', 'dr-grpo', 'rloo']);

/** Per-step credit (the seed's discounted per-step returns with process rewards); `serve` and `train` only. */
const perStepAdvantageSchema = z
  .strictObject({
    estimator: advantageEstimatorSchema
      .default('grpo')
      .describe("The group-relative advantage paid on a rollout's last step"),
    gamma: z
      .number()
      .min(0)
      .max(1)
      .describe(
        'Discount per step: step t of T gets the terminal advantage × γ^(T−1−t) (plus discounted process rewards)',
      ),
    tool_call_bonus: z
      .number()
      .min(0)
      .default(0)
      .describe('Process reward of a step per tool call that returned no error'),
    reasoning_bonus: z
      .number()
      .min(0)
      .default(0)
      .describe('Process reward of a step whose reasoning has at least min_reasoning_chars characters'),
    min_reasoning_chars: z.int().min(1).default(40),
    max_bonus: z
      .number()
      .min(0)
      .optional()
      .describe("Cap on the sum of a rollout's process rewards (spent in step order); default no cap"),
  })
  .describe(
    "Per-step credit, sent to the trainer as per-token advantages (Atropos' `advantages` field): one value per assistant turn, G_t = r_t + γ·G_{t+1}, r_t = the step's process reward, plus the group advantage on the last step",
  );

export const runConfigSchema = z
  .strictObject({
    groups: z.int().min(1).default(4).describe('Groups to run (`shears process`)'),
    concurrency: z.int().min(1).max(4096).default(8).describe('Rollouts in flight at once'),
    out: z.string().min(1).default('runs/shears.jsonl').describe('JSONL output path'),
    report: z.boolean().default(true).describe('Also write an HTML report next to the JSONL'),
    metrics: z
      .boolean()
      .default(true)
      .describe(
        'Also write the run metrics stream next to the output (`<out>.metrics.jsonl`: a row per group, per time window and per trainer step; see docs/runs.md)',
      ),
    metrics_window_seconds: z
      .number()
      .positive()
      .max(86_400)
      .default(10)
      .describe('Length of a window row of the run metrics stream, in seconds'),
    prometheus: z
      .strictObject({
        port: z.int().min(0).max(65535).describe('Port of GET /metrics (0: any free port, printed at start)'),
        host: z.string().min(1).default('127.0.0.1').describe('Bind address of GET /metrics'),
      })
      .optional()
      .describe(
        '`serve` and `train`: expose the run metrics at GET /metrics for Prometheus (counters and gauges; see docs/runs.md)',
      ),
    max_retries: z
      .int()
      .min(0)
      .max(20)
      .default(2)
      .describe('Retries of rollouts that failed for infrastructure reasons'),
    progress: z.enum(['auto', 'bars', 'lines', 'none']).default('auto'),
    advantage: z
      .union([advantageEstimatorSchema, perStepAdvantageSchema])
      .default('grpo')
      .describe(
        'Advantage estimator over the counted scores of a group (grpo | dr-grpo | rloo), or { estimator, gamma, ... } for per-step credit (`serve`/`train`)',
      ),
    all_equal_scores: z
      .enum(['drop', 'keep'])
      .default('drop')
      .describe('Groups whose scores are all equal carry no signal; Atropos drops them'),
    drain_timeout_ms: z
      .int()
      .min(0)
      .default(60_000)
      .describe(
        'After the first Ctrl-C, how long rollouts that finished their turns may take to get their rewards before everything stops',
      ),
    max_repeated_failures: z
      .int()
      .min(0)
      .optional()
      .describe(
        'Stop the run (exit 4) when the same infrastructure, judge or env failure happens this many times with no rollout scored in between; 0 never stops (default: the larger of 10 and run.concurrency)',
      ),
    success_threshold: z
      .number()
      .optional()
      .describe(
        "A rollout solved its task (pass@k, correct, solved) when its reward is at least this; default: the env's own verdict (`success` from its reward) where it gives one, else reward >= 1",
      ),
  })
  .describe('Settings of `shears process` and `shears serve`');

const clusterConfigSchema = z
  .strictObject({
    engine: z.literal('ray').default('ray').describe('The cluster engine (only Ray)'),
    address: z
      .string()
      .min(1)
      .describe(
        "The Ray head's GCS address, `ray://HOST:PORT` or `HOST:PORT` (the port of `ray start --head --port`); `--cluster` sets it",
      ),
    workers: z
      .int()
      .min(1)
      .default(2)
      .describe('Env workers (`shears serve` processes) placed on the cluster'),
    max_restarts: z
      .int()
      .min(0)
      .default(3)
      .describe('Times Ray restarts one env worker whose process or node died'),
    worker_cpus: z.number().min(0).default(1).describe('CPUs each env worker reserves on its node'),
    worker_resources: z
      .record(z.string().min(1), z.number().min(0))
      .default({})
      .describe(
        'Ray custom resources each env worker asks for (e.g. { docker: 1 } for nodes started with it)',
      ),
    docker_resource: z
      .string()
      .min(1)
      .default('docker')
      .describe(
        'The Ray custom resource a node with a Docker daemon advertises (`ray start --resources \'{"docker": 1}\'`); with sandbox.provider docker the env workers are placed only on such nodes, and a cluster with none is refused',
      ),
    python: z
      .string()
      .min(1)
      .default('python3')
      .describe(
        'Python that runs the driver (python -m shears_cluster; needs ray, `shears prepare --cluster ray`)',
      ),
    shears_command: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'How each node starts `shears` (the same path on every node); default: this Node.js and this shears',
      ),
    max_workers: z
      .int()
      .min(1)
      .optional()
      .describe(
        '`shears train`: add env workers, up to this many, while the trainer waits on data (one fewer, never below cluster.workers, while batches wait for it); unset: cluster.workers, fixed',
      ),
    trainer: z
      .strictObject({
        cpus: z.number().min(0).default(1).describe('CPUs the trainer reserves on its node'),
        gpus: z
          .number()
          .min(0)
          .default(0)
          .describe('GPUs the trainer asks for (a node with them, or refused)'),
        memory_gb: z
          .number()
          .min(0)
          .default(0)
          .describe("Memory (GiB) the trainer reserves (Ray's memory resource); 0: none reserved"),
        resources: z
          .record(z.string().min(1), z.number().min(0))
          .default({})
          .describe('Ray custom resources the trainer asks for, e.g. { gpu_node: 1 } to pin it to a node'),
      })
      .optional()
      .describe(
        '`shears train`: what the trainer asks Ray for (default: 1 CPU); refused before anything starts when no node has it',
      ),
  })
  .describe('`shears serve` and `shears train` on a Ray cluster (docs/run-on-a-cluster.md)');

export const apiConfigSchema = z
  .strictObject({
    url: z.url().default('http://127.0.0.1:8000').describe('Trajectory API the workers push to'),
    host: z.string().default('127.0.0.1').describe('Bind address of `shears api`'),
    port: z.int().min(0).max(65535).default(8000),
    batch_size: z
      .int()
      .min(1)
      .default(32)
      .describe(
        'Trainer batch size `serve` assumes for api.off_policy_limit while the API reports none (/info batch_size -1: no trainer registered, or after a reset)',
      ),
    off_policy_limit: z
      .int()
      .min(0)
      .default(4)
      .describe('`shears serve` pauses when it is this many batches ahead of the trainer'),
    poll_ms: z.int().min(10).default(1000).describe('How often a paused worker asks /status again'),
    wait_note_ms: z
      .int()
      .min(10)
      .default(30_000)
      .describe(
        'A worker waiting on the trajectory API (for a trainer to register, or paused until the trainer takes batches) says so at once, then again this often, with how long it has waited',
      ),
    database: z
      .string()
      .min(1)
      .default('shears-trajectory-api.sqlite')
      .describe(
        'SQLite file holding the queue of `shears api` and `shears train`, relative to the working directory; a restart resumes from it. ":memory:" keeps everything in memory like Atropos (lost on exit)',
      ),
    auth_token: z
      .string()
      .optional()
      .describe(
        'Bearer token required by the API; write "${SHEARS_API_TOKEN}" to read it from the environment',
      ),
    synchronous: z
      .enum(['full', 'normal'])
      .default('full')
      .describe(
        'SQLite sync of `api.database`: "full" fsyncs every commit (an acknowledged group survives power loss), "normal" survives process crashes only',
      ),
    max_queued_groups: z
      .int()
      .min(1)
      .default(10_000)
      .describe(
        'Stored groups (queued, buffered, formed into batches) before posts are answered 429 + Retry-After',
      ),
    max_queued_bytes: z
      .int()
      .min(1)
      .default(8 * 1024 ** 3)
      .describe('Stored payload bytes before posts are answered 429 + Retry-After (default 8 GiB)'),
    max_request_bytes: z
      .int()
      .min(1)
      .default(512 * 1024 ** 2)
      .describe('Largest request body, compressed and decompressed, before 413 (default 512 MiB)'),
    retry_after_seconds: z.int().min(0).default(2).describe('Retry-After seconds sent with a 429'),
    split_groups: z
      .boolean()
      .default(true)
      .describe('Split one group when the batch size cannot be reached from whole groups'),
    batch_order: z
      .enum(['fifo', 'lifo'])
      .default('fifo')
      .describe('Order formed batches are served in: "fifo" (oldest data first) or Atropos\'s "lifo"'),
  })
  .describe('The Atropos-compatible trajectory API (`shears api`, and `shears train` with train.start_api)');

export const evaluateConfigSchema = z
  .strictObject({
    k: z.int().min(1).max(1024).default(4).describe('Samples per task'),
    max_items: z.int().min(1).optional().describe('Evaluate at most this many tasks'),
    out: z.string().min(1).default('runs/eval.jsonl'),
    bootstrap_samples: z.int().min(100).max(100000).default(1000),
    confidence: z.number().gt(0).lt(1).default(0.95),
  })
  .describe('Settings of `shears evaluate`');

/** The reference trainer (`trainers/`, `python -m shears_trainer grpo`) that `shears train` starts itself. */
export const referenceTrainerConfigSchema = z
  .strictObject({
    model: z
      .string()
      .min(1)
      .describe('Hugging Face model folder the trainer starts from (relative to where shears runs)'),
    venv: z
      .string()
      .min(1)
      .default('.shears/trainer-venv')
      .describe(
        "The trainer's virtual environment: `shears prepare --trainer` creates it, `shears doctor` checks it",
      ),
    python: z
      .string()
      .min(1)
      .optional()
      .describe('Python interpreter with shears_trainer installed; overrides train.reference.venv'),
    steps: z.int().min(1).default(50).describe('Optimiser steps; the run ends after the last one'),
    batch_size: z
      .int()
      .min(1)
      .optional()
      .describe('Sequences per step, registered with the API (default: api.batch_size)'),
    micro_batch: z
      .int()
      .min(1)
      .optional()
      .describe('Sequences per forward pass (gradient accumulation; trainer default 16)'),
    lr: z.number().positive().optional().describe('AdamW learning rate (trainer default 1e-3)'),
    weight_decay: z.number().min(0).optional(),
    max_grad_norm: z.number().positive().optional(),
    clip_low: z.number().min(0).optional(),
    clip_high: z.number().min(0).optional(),
    beta: z.number().min(0).optional().describe('KL weight to the reference model (trainer default 0)'),
    loss: z.enum(['grpo', 'token', 'dr_grpo']).optional().describe('Loss aggregation (trainer default grpo)'),
    advantages: z
      .enum(['served', 'scores'])
      .optional()
      .describe(
        "served: shears' per-token advantages (default); scores: the trainer normalises scores per group",
      ),
    checkpoint_every: z
      .int()
      .min(0)
      .optional()
      .describe('Checkpoint every N steps into OUTPUT/checkpoints/step-N'),
    lora_rank: z
      .int()
      .min(0)
      .optional()
      .describe('Train a LoRA adapter of this rank (peft); merged into the saved model'),
    lora_alpha: z.int().min(1).optional(),
    seed: z.int().optional(),
    threads: z.int().min(1).optional().describe('torch CPU threads'),
    device: z
      .string()
      .regex(/^(auto|cpu|cuda(:\d+)?)$/, 'auto, cpu, cuda or cuda:N')
      .optional()
      .describe(
        'torch device of the trainer (and its colocated policy server): auto (default: CUDA when its torch has it, else the CPU), cpu, cuda or cuda:N; a device the machine lacks is refused when the trainer starts',
      ),
    batch_timeout_s: z.number().positive().optional().describe('Seconds the trainer waits for one batch'),
    colocated: z
      .boolean()
      .default(true)
      .describe(
        'The trainer serves the policy itself (POST /generate, updated after every step): shears picks a free port and points the managed vllm server (server.base_url) at it. false: the policy server is yours (server.base_url, e.g. vLLM)',
      ),
    args: z.array(z.string()).default([]).describe('More arguments for `python -m shears_trainer grpo`'),
    env: z.record(z.string(), z.string()).default({}).describe('Environment of the trainer process'),
  })
  .describe('The reference trainer (trainers/), started by `shears train` with --output');

export const trainConfigSchema = z
  .strictObject({
    trainer: z
      .strictObject({
        command: z
          .array(z.string())
          .min(1)
          .describe('Trainer command and arguments, e.g. ["python", "train.py"]'),
        cwd: z.string().optional(),
        env: z.record(z.string(), z.string()).default({}),
        needs_inference_logprobs: z
          .boolean()
          .default(false)
          .describe(
            "The trainer reads each group's inference_logprobs (an importance ratio or a GRPO loss against the sampling policy, as the reference trainer and Atropos' example trainer do). `shears train` then refuses, before anything starts, a server that records none: a chat (phase-1) server gives the trainer inference_logprobs null; use a token-in/token-out server (server.provider vllm or sglang)",
          ),
      })
      .optional()
      .describe('Any Atropos-compatible trainer; it receives SHEARS_API_URL / ATROPOS_SERVER_URL'),
    reference: referenceTrainerConfigSchema.optional(),
    output: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Folder for the reference trainer (train.reference) to write the final model, metrics.jsonl, checkpoints/ and train-summary.json into; `--output` sets it. Must not exist or be empty',
      ),
    weight_sync: z
      .strictObject({
        mode: z
          .enum(['restart', 'lora'])
          .describe(
            "restart: shears restarts the vLLM server (command) from each checkpoint; lora: loads each checkpoint's adapter into the running server (/v1/load_lora_adapter)",
          ),
        command: z
          .array(z.string())
          .min(1)
          .optional()
          .describe('restart: the vLLM server command shears supervises; "{model}" becomes the model folder'),
        lora_name: z
          .string()
          .min(1)
          .default('policy')
          .describe('lora: the adapter name; server.model must be the same, so the workers sample from it'),
        health_timeout_s: z
          .number()
          .positive()
          .default(600)
          .describe('restart: seconds a started server may take to answer /health'),
      })
      .optional()
      .describe(
        "Sync the reference trainer's checkpoints (every train.reference.checkpoint_every steps) to a vLLM server at server.base_url",
      ),
    workers: z
      .int()
      .min(1)
      .max(64)
      .default(1)
      .describe(
        '`shears serve` workers to start; worker i runs with env.seed + i, so workers draw different data',
      ),
    start_api: z.boolean().default(true).describe('Start the trajectory API in-process'),
  })
  .describe('Settings of `shears train`');

/** An env for held-out evaluation or capability data: an env id and its settings. */
const loopEnvSchema = z
  .strictObject({
    name: z.string().min(1).describe('Env id from a loaded plugin (e.g. tasks)'),
    settings: settingsSchema.default({}).describe("The env's settings (for tasks: { file: ... })"),
  })
  .describe('An env (a task set) beside the training env');

const loopConfigSchema = z
  .strictObject({
    replay: z
      .strictObject({
        threshold: z
          .number()
          .default(0.7)
          .describe('Keep a group whose best counted score is strictly above this'),
        capacity: z.int().min(1).default(1000).describe('Groups kept at most; the lowest-scoring makes room'),
        share: z
          .number()
          .min(0)
          .lt(1)
          .default(0.3)
          .describe(
            'Share of the groups sent to the trainer that are replays (the seed: 70 % fresh, 30 % replay)',
          ),
        path: z
          .string()
          .min(1)
          .optional()
          .describe(
            'SQLite file of the kept groups, relative to where shears runs (default: <run.out>.replay.sqlite); a restart keeps them',
          ),
      })
      .optional()
      .describe('Replay high-scoring groups beside fresh ones (`serve`, `train`)'),
    curriculum: z
      .strictObject({
        levels: z
          .array(z.union([z.number(), z.string().min(1)]))
          .min(1)
          .optional()
          .describe(
            "Difficulty values from easiest to hardest, as the env's tasks name them (default: the distinct difficulties of the env's task set, sorted)",
          ),
        window: z.int().min(1).default(100).describe('Scores (counted rollouts) in the rolling mean'),
        advance_above: z
          .number()
          .default(0.75)
          .describe('Advance a level when the rolling mean is strictly above this'),
        fall_back_below: z
          .number()
          .optional()
          .describe('Fall back a level when the rolling mean is strictly below this (default: never)'),
        start_level: z.int().min(0).default(0),
      })
      .optional()
      .describe(
        "Draw tasks by difficulty level (the env's task metadata `difficulty`), advancing on the rolling mean score (`serve`, `train`)",
      ),
    evaluation: z
      .strictObject({
        every_steps: z
          .int()
          .min(1)
          .describe('Evaluate after every N trainer steps (from the trajectory API)'),
        k: z.int().min(1).max(1024).default(4).describe('Samples per task'),
        env: loopEnvSchema
          .optional()
          .describe("The held-out tasks (default: the training env's evaluation set)"),
        max_items: z.int().min(1).optional().describe('Evaluate at most this many tasks'),
      })
      .optional()
      .describe(
        'Evaluation during training: held-out tasks against the current policy, pass@k and mean score with intervals in the metrics stream (`serve`, `train`)',
      ),
    safety: z
      .strictObject({
        tolerance: z
          .number()
          .gt(0)
          .max(1)
          .default(0.95)
          .describe('A regression is an evaluation score below tolerance × baseline'),
        metric: z
          .enum(['mean_score', 'pass@1'])
          .default('mean_score')
          .describe('The evaluation score compared'),
        baseline: z
          .number()
          .optional()
          .describe('The baseline score (default: the first evaluation of the run)'),
        capability: loopEnvSchema.describe(
          'The capability data (a task set) the mix shifts toward on a regression',
        ),
        capability_share: z
          .number()
          .gt(0)
          .lt(1)
          .default(0.5)
          .describe('Share of the groups drawn from the capability data while regressed'),
      })
      .optional()
      .describe(
        'Collapse prevention: reads loop.evaluation; on a regression shifts the data mix toward capability data, back when scores recover',
      ),
  })
  .describe(
    'The improvement loop of `serve` and `train`: replay, curriculum, evaluation during training, safety',
  );

const wandbConfigSchema = z
  .strictObject({
    project: z.string().min(1).describe('W&B project the run is logged to'),
    entity: z.string().min(1).optional().describe("W&B entity (user or team); default: the key's own entity"),
    name: z.string().min(1).optional().describe('Display name of the W&B run; default: one W&B picks'),
    // Accepted by the schema only to be refused with its own message (the generic one would
    // print the value): the run commands refuse it before anything runs.
    api_key: z
      .unknown()
      .optional()
      .describe('Not allowed (refused): the W&B key is read only from WANDB_API_KEY'),
    rollouts_table: z
      .strictObject({
        max_rows: z
          .int()
          .min(0)
          .default(1000)
          .describe('Rollouts in the table logged at the end of the run (the latest ones; 0: no table)'),
        max_chars: z
          .int()
          .min(100)
          .default(4000)
          .describe('Characters of conversation text per rollout before it is cut (with a marker)'),
      })
      .prefault({})
      .describe('The rollouts table (group, task, score, outcome, turns, conversation)'),
    init_timeout_seconds: z
      .number()
      .positive()
      .default(60)
      .describe('How long starting the W&B run may take before the run is refused'),
    finish_timeout_seconds: z
      .number()
      .positive()
      .default(120)
      .describe('How long finishing the W&B run (sending what is left) may take at the end'),
  })
  .describe(
    '`process`, `serve`, `train` and `evaluate`: log the run metrics stream and a rollouts table to Weights & Biases with @wandb/sdk (key from WANDB_API_KEY; see docs/configuration.md, Weights & Biases)',
  );

export const shearsConfigSchema = z
  .strictObject({
    $schema: z.string().optional(),
    plugins: z
      .array(z.string().min(1))
      .default([])
      .describe('npm packages (or paths) whose default export is a shears plugin'),
    env: envConfigSchema.prefault({}),
    server: serverConfigSchema.prefault({}),
    sandbox: sandboxConfigSchema.prefault({}),
    judge: judgeConfigSchema.optional(),
    group_judge: groupJudgeConfigSchema.optional(),
    run: runConfigSchema.prefault({}),
    api: apiConfigSchema.prefault({}),
    evaluate: evaluateConfigSchema.prefault({}),
    train: trainConfigSchema.prefault({}),
    loop: loopConfigSchema.optional(),
    sinks: z
      .array(
        z.union([
          z.string().min(1),
          z.strictObject({
            id: z.string().min(1).describe('A trajectory sink id from a loaded plugin'),
            settings: settingsSchema
              .default({})
              .describe("The sink's settings, as its plugin documents them"),
          }),
        ]),
      )
      .default([])
      .describe(
        '`process`, `evaluate`, `serve` and `train`: trajectory sinks from loaded plugins (`plugins`) that receive every group the run writes to its JSONL, redacted, in the same order: a sink id, or { id, settings } (built in: jsonl from @shears/cli, atropos-api and replay-buffer from @shears/grpo)',
      ),
    cluster: clusterConfigSchema.optional(),
    wandb: wandbConfigSchema.optional(),
    tasks: z
      .strictObject({
        task_file: z
          .string()
          .min(1)
          .describe(
            "A file of task rows (JSON/JSONL, CSV for a defineEnv env), relative to the config file's folder (to the working directory on the command line)",
          ),
      })
      .optional()
      .describe(
        "The seed's spelling of a task file: without env.name it is the tasks env's file (`env: { name: tasks, settings: { file: F } }`); with another env it is that env's rows (a defineEnv env's `tasks` setting), refused by an env that makes its own tasks",
      ),
  })
  .describe('shears configuration');

export type ShearsConfig = z.infer<typeof shearsConfigSchema>;
export type ShearsConfigInput = z.input<typeof shearsConfigSchema>;
