// The harness env's stand-in for a model (`server.provider: scripted`): a scripted policy that
// plays each task's `solution` — a shell command that solves it — through the harness's own shell
// tool (the preset's `mainTool`), then answers that it is done. The real harness program runs
// unchanged, talks to its gateway session and executes the call itself; the verifier scores the
// result. So a harness guide runs end to end with no GPU and no key. Requests that do not offer
// the shell tool (a title request, a memory extraction) get a short plain answer.
import { InvalidArgumentError } from '@shears/core';
import type { ScriptedChatRequest, ScriptedReply } from '@shears/core/scripted';

interface DemoTask {
  id: string;
  prompt: string;
  solution?: unknown;
}

type ToolParameters = { properties?: Record<string, { type?: unknown }>; required?: string[] };

/** The text of a message's content: a string, or the text parts of a list. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
        ? (part as { text: string }).text
        : '',
    )
    .join('\n');
}

/**
 * The arguments of a shell call: the solution goes into the tool's command field (`command`,
 * `cmd`, else its first string field); any other required string field (a `description`) gets a
 * short text.
 */
function shellArguments(parameters: ToolParameters | undefined, solution: string): Record<string, string> {
  const properties = parameters?.properties ?? {};
  const strings = Object.keys(properties).filter((name) => properties[name]?.type === 'string');
  const field = ['command', 'cmd'].find((name) => name in properties) ?? strings[0] ?? 'command';
  const args: Record<string, string> = { [field]: solution };
  for (const name of parameters?.required ?? [])
    if (!(name in args) && properties[name]?.type === 'string') args[name] = 'Run the fix for the task';
  return args;
}

/**
 * The scripted policy for `tasks` (each with a `solution`) played through the tool `mainTool`.
 * A task without a solution is refused here, naming it: the stand-in would otherwise score 0
 * without a word.
 */
export function createHarnessDemoPolicy(options: {
  tasks: readonly DemoTask[];
  mainTool: string | undefined;
}): (request: ScriptedChatRequest) => ScriptedReply {
  const { tasks, mainTool } = options;
  if (!mainTool)
    throw new InvalidArgumentError({
      argument: 'mainTool',
      message:
        'harness env: the scripted demo policy plays a task through the harness\'s shell tool; set "mainTool" (a preset sets it) to use server.provider: scripted',
    });
  const missing = tasks.filter((task) => typeof task.solution !== 'string' || task.solution.trim() === '');
  if (missing.length > 0)
    throw new InvalidArgumentError({
      argument: 'tasks',
      value: missing.map((task) => task.id),
      message: `harness env: server.provider scripted plays each task's "solution" (a shell command that solves it); task(s) ${missing
        .slice(0, 5)
        .map((task) => `"${task.id}"`)
        .join(', ')}${missing.length > 5 ? ', …' : ''} have none: add one, or use a model server`,
    });
  // Longest prompts first: a prompt that contains another's still finds its own task.
  const byPrompt = [...tasks].sort((a, b) => b.prompt.length - a.prompt.length);
  return (request) => {
    const shell = request.tools?.find((tool) => tool.function.name === mainTool);
    if (!shell) return { content: 'OK.' };
    const userText = request.messages
      .filter((message) => message.role === 'user')
      .map((message) => contentText(message.content))
      .join('\n');
    const task = byPrompt.find((candidate) => userText.includes(candidate.prompt.trim()));
    if (!task)
      return {
        content: `(scripted demo policy: no task's prompt is in this conversation; tasks: ${tasks.map((entry) => entry.id).join(', ')})`,
      };
    const called = request.messages.some(
      (message) => message.role === 'tool' || (message.role === 'assistant' && message.tool_calls),
    );
    if (called) return { content: `Done: ran the fix for ${task.id}.` };
    return {
      toolCalls: [
        {
          name: mainTool,
          arguments: shellArguments(
            shell.function.parameters as ToolParameters | undefined,
            String(task.solution),
          ),
        },
      ],
    };
  };
}
