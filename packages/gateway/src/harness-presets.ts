// Ready settings for four agent CLIs as the `harness` env starts them: the command line, the
// environment and config files that point each at its rollout's gateway session, and the
// documented switches that turn off telemetry and update checks. What each one sends is in
// docs/harness-requests.md; the versions below are the ones the CI tests install and run.
//
// Values may hold placeholders, filled per rollout: {{baseUrl}} (Anthropic clients, no /v1),
// {{openaiBaseUrl}} (OpenAI clients, with /v1), {{apiKey}}, {{model}}, {{home}} (the harness's
// own HOME, a fresh folder per rollout) and {{workdir}} (the sandbox workspace). The task text
// reaches the command as "$SHEARS_PROMPT", never spliced into the command line. With the env's
// tools served over MCP, {{mcpUrl}} is the rollout's MCP endpoint (the key is its bearer) and
// each preset's `mcp` part writes that server into the harness's config the way it reads one.

export type HarnessApi = 'chat.completions' | 'responses' | 'messages';

export interface HarnessPreset {
  readonly id: string;
  readonly description: string;
  /** The npm package that provides the CLI, and the version the tests run. */
  readonly package: string;
  readonly testedVersion: string;
  /** The API the harness speaks to the gateway. */
  readonly api: HarnessApi;
  /** Shell command line run in the workspace. */
  readonly command: string;
  /** Environment for the command (placeholders filled). */
  readonly env: Readonly<Record<string, string>>;
  /** Files written before the command starts: `~/…` below the harness HOME, else below the workspace. */
  readonly files: Readonly<Record<string, string>>;
  /** The harness's own shell tool: the thread that offers it is the main conversation, the one that trains. */
  readonly mainTool: string;
  /** How the harness is given the env's tools over MCP (the server is named `shears`). */
  readonly mcp?: HarnessPresetMcp;
}

export interface HarnessPresetMcp {
  /** Files written in place of the preset's same-named ones (and besides its others). */
  readonly files: Readonly<Record<string, string>>;
  /** The command line, when the harness takes its MCP config as an option. */
  readonly command?: string;
  /** Environment added for it (placeholders filled). */
  readonly env?: Readonly<Record<string, string>>;
  /** The name the harness shows the model for the env's tool `tool`. */
  toolName(tool: string): string;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
/** The MCP server's headers as the harnesses take them: the session key as bearer. */
const MCP_HEADERS = { Authorization: 'Bearer {{apiKey}}' };

const QWEN_SETTINGS = {
  telemetry: { enabled: false },
  privacy: { usageStatisticsEnabled: false },
  general: { disableAutoUpdate: true },
};

const qwenCode: HarnessPreset = {
  id: 'qwen-code',
  description: 'Qwen Code (`qwen -p`), OpenAI Chat Completions, streaming',
  package: '@qwen-code/qwen-code',
  testedVersion: '0.15.10',
  api: 'chat.completions',
  command: 'qwen -p "$SHEARS_PROMPT" --auth-type openai --yolo',
  env: {
    OPENAI_BASE_URL: '{{openaiBaseUrl}}',
    OPENAI_API_KEY: '{{apiKey}}',
    OPENAI_MODEL: '{{model}}',
  },
  files: { '~/.qwen/settings.json': json(QWEN_SETTINGS) },
  mainTool: 'run_shell_command',
  mcp: {
    // qwen-code: `mcpServers` in settings.json, `httpUrl` for streamable HTTP; tools are `mcp__<server>__<tool>`.
    files: {
      '~/.qwen/settings.json': json({
        ...QWEN_SETTINGS,
        mcpServers: { shears: { httpUrl: '{{mcpUrl}}', headers: MCP_HEADERS, trust: true } },
        // qwen-code hides MCP tools behind its `tool_search` tool (revealed mid-conversation,
        // which changes the prompt and so the exact token sequence); without that tool it
        // offers them from the first request.
        permissions: { deny: ['tool_search'] },
      }),
    },
    toolName: (tool) => `mcp__shears__${tool}`,
  },
};

const OPENCODE_CONFIG = {
  provider: {
    shears: {
      npm: '@ai-sdk/openai-compatible',
      name: 'shears',
      options: { baseURL: '{{openaiBaseUrl}}', apiKey: '{{apiKey}}' },
      models: { '{{model}}': { name: 'policy' } },
    },
  },
  model: 'shears/{{model}}',
  autoupdate: false,
  share: 'disabled',
  permission: { bash: 'allow', edit: 'allow' },
};

const opencode: HarnessPreset = {
  id: 'opencode',
  description:
    'opencode (`opencode run`), a custom @ai-sdk/openai-compatible provider, Chat Completions streaming',
  package: 'opencode-ai',
  testedVersion: '1.18.33',
  api: 'chat.completions',
  command: 'opencode run "$SHEARS_PROMPT"',
  env: {
    OPENCODE_CONFIG: '{{home}}/opencode.json',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_SHARE: '1',
  },
  files: { '~/opencode.json': json(OPENCODE_CONFIG) },
  mainTool: 'bash',
  mcp: {
    // opencode: `mcp` in opencode.json, `type: remote`; tools are `<server>_<tool>`.
    files: {
      '~/opencode.json': json({
        ...OPENCODE_CONFIG,
        mcp: { shears: { type: 'remote', url: '{{mcpUrl}}', headers: MCP_HEADERS, enabled: true } },
        // Tools without a permission rule are asked about, and `opencode run` has no one to ask.
        permission: { ...OPENCODE_CONFIG.permission, 'shears_*': 'allow' },
      }),
    },
    toolName: (tool) => `shears_${tool}`,
  },
};

const claudeCode: HarnessPreset = {
  id: 'claude-code',
  description: 'Claude Code (`claude -p`), Anthropic Messages, streaming',
  package: '@anthropic-ai/claude-code',
  testedVersion: '2.1.197',
  api: 'messages',
  command: 'claude -p "$SHEARS_PROMPT" --model "{{model}}" --dangerously-skip-permissions',
  env: {
    ANTHROPIC_BASE_URL: '{{baseUrl}}',
    ANTHROPIC_API_KEY: '{{apiKey}}',
    ANTHROPIC_MODEL: '{{model}}',
    ANTHROPIC_SMALL_FAST_MODEL: '{{model}}',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // --dangerously-skip-permissions is refused as root unless the CLI is told it is sandboxed.
    IS_SANDBOX: '1',
  },
  files: {},
  mainTool: 'Bash',
  mcp: {
    // Claude Code: `--mcp-config <file>` with `mcpServers`, `type: http`; tools are `mcp__<server>__<tool>`.
    files: {
      '~/shears-mcp.json': json({
        mcpServers: { shears: { type: 'http', url: '{{mcpUrl}}', headers: MCP_HEADERS } },
      }),
    },
    command:
      'claude -p "$SHEARS_PROMPT" --model "{{model}}" --dangerously-skip-permissions --mcp-config "{{home}}/shears-mcp.json"',
    // Claude Code otherwise connects MCP servers in the background and may send its first
    // request before their tools are there (offering `WaitForMcpServers` instead).
    env: { MCP_CONNECTION_NONBLOCKING: 'false' },
    toolName: (tool) => `mcp__shears__${tool}`,
  },
};

const CODEX_CONFIG = [
  'model = "{{model}}"',
  'model_provider = "shears"',
  'check_for_update_on_startup = false',
  '[analytics]',
  'enabled = false',
  '[model_providers.shears]',
  'name = "shears"',
  'base_url = "{{openaiBaseUrl}}"',
  'env_key = "SHEARS_API_KEY"',
  'wire_api = "responses"',
  '',
].join('\n');

const codex: HarnessPreset = {
  id: 'codex',
  description: 'Codex CLI (`codex exec`), OpenAI Responses, streaming, stateless input',
  package: '@openai/codex',
  testedVersion: '0.169.0',
  api: 'responses',
  // Codex reads more input from stdin when it is open; the sandbox gives it none.
  command:
    'codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "$SHEARS_PROMPT" < /dev/null',
  env: {
    CODEX_HOME: '{{home}}/.codex',
    SHEARS_API_KEY: '{{apiKey}}',
  },
  files: { '~/.codex/config.toml': CODEX_CONFIG },
  mainTool: 'exec_command',
  mcp: {
    // Codex: `[mcp_servers.<name>]` in config.toml, `url` for streamable HTTP, the key from the
    // environment; tools are `mcp__<server>__<tool>`. Codex otherwise starts MCP servers in the
    // background and sends its first request before their tools are listed; `required = true`
    // makes it wait for the server (and fail to start without it).
    files: {
      '~/.codex/config.toml': [
        CODEX_CONFIG.trimEnd(),
        '[mcp_servers.shears]',
        'url = "{{mcpUrl}}"',
        'bearer_token_env_var = "SHEARS_API_KEY"',
        'required = true',
        '',
      ].join('\n'),
    },
    toolName: (tool) => `mcp__shears__${tool}`,
  },
};

export const HARNESS_PRESETS: Readonly<Record<string, HarnessPreset>> = {
  'qwen-code': qwenCode,
  opencode,
  'claude-code': claudeCode,
  codex,
};
