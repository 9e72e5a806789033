// Tokenizer contract: encode, decode and chat templates for one model, loaded from a local
// tokenizer.json + tokenizer_config.json.
import type { ChatMessage, ToolSchema } from './chat.js';

export interface ChatTemplateOptions {
  tools?: ToolSchema[];
  addGenerationPrompt?: boolean;
  /** Extra template variables (e.g. `enable_thinking`). */
  variables?: Record<string, unknown>;
}

export interface TokenizerV1 {
  readonly specificationVersion: 'v1';
  readonly id: string;
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  applyChatTemplate(messages: ChatMessage[], options?: ChatTemplateOptions): string;
  /** Token ids that end a turn (eos and template-specific end-of-turn tokens). */
  readonly stopTokenIds: readonly number[];
}
