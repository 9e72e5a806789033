// Test fixtures: the multi-turn tool-using conversations the chat-template tests render.
import type { ChatMessage, ToolSchema } from '@shears/core';

export const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

// system, user, assistant (reasoning + tool call), tool result, assistant (reasoning + answer), user.
export const CONVERSATION: ChatMessage[] = [
  { role: 'system', content: 'You are a careful assistant.' },
  { role: 'user', content: 'What is the weather in Paris?' },
  {
    role: 'assistant',
    content: null,
    reasoning_content: 'The user wants the weather. I will call the tool.',
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 18, "sky": "clear"}' },
  { role: 'assistant', content: 'It is 18 °C and clear in Paris.', reasoning_content: 'Report it.' },
  { role: 'user', content: 'Thanks! And tomorrow?' },
];

// CONVERSATION's first four turns, then an assistant turn with text and a tool call, and a long
// tool result: the prompt of a rollout's third turn.
export const LONG_CONVERSATION: ChatMessage[] = [
  ...CONVERSATION.slice(0, 4),
  {
    role: 'assistant',
    content: 'Checking again.',
    tool_calls: [
      { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Lyon"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'c2', content: 'rain '.repeat(400) },
];

// Tool-call arguments with non-ASCII text, nesting and a float, then the tool's answer.
export const ARGUMENTS_CONVERSATION: ChatMessage[] = [
  { role: 'user', content: '東京の天気は？' },
  {
    role: 'assistant',
    content: '',
    tool_calls: [
      {
        id: 'c1',
        type: 'function',
        function: {
          name: 'get_weather',
          arguments: '{"city": "東京", "days": 3, "scale": 1.5, "units": {"temp": "C"}, "tags": ["a", "b"]}',
        },
      },
      { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "大阪"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'c1', content: '晴れ、18 °C' },
  { role: 'tool', tool_call_id: 'c2', content: '雨' },
];
