// Chat messages in the OpenAI wire shape (snake_case), as they travel to servers, into
// trajectories and into Atropos `messages`. Extra keys are preserved.

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: {
    name: string;
    /** JSON text of the arguments, as the model produced it (or as a parser serialised it). */
    arguments: string;
  };
}

export interface TextContentPart {
  type: 'text';
  text: string;
}

/** An image for a multimodal model: an `https:` URL or a `data:<mime>;base64,<data>` URL. */
export interface ImageUrlContentPart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

export type ContentPart = TextContentPart | ImageUrlContentPart | { type: string; [key: string]: unknown };

export interface ChatMessage {
  role: ChatRole | (string & {});
  content: string | null | ContentPart[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  /** Reasoning text kept on assistant messages (hermes-agent's `reasoning_content`). */
  reasoning_content?: string;
  [key: string]: unknown;
}

/** An assistant message as a server returns it: reasoning may come in any of three fields. */
export interface AssistantMessage extends ChatMessage {
  role: 'assistant';
  reasoning?: string | null;
  reasoning_details?: Array<{ text?: string | null; [key: string]: unknown }> | null;
}

/** An OpenAI function-tool definition, as sent to the model. */
export interface ToolSchema {
  type: 'function';
  function: {
    name: string;
    description?: string;
    parameters?: Record<string, unknown>;
    strict?: boolean;
  };
}

/** The text of a message's content, joining text parts. */
export function messageText(message: Pick<ChatMessage, 'content'>): string {
  const { content } = message;
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}
