// MCP `tools/call` results → a shears ToolOutput. The model sees text: text parts as they are,
// embedded text resources as their text, structured content as JSON when the server sent no text,
// and a one-line note for each image/audio/binary part (the tool message of the chat format
// shears renders carries text only). With `images: 'attach'` an image part instead becomes an
// `image_url` data URL in ToolOutput.images (the kernel sends it in a user message after the tool
// messages) and the tool text says so. The trajectory keeps the structured content and what each
// non-text part was (type, MIME type, size).
import type { ImageUrlContentPart, ToolOutput } from '@shears/core';

interface ContentPart {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

export interface McpCallResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  /** Pre-2025 servers answer `{ toolResult }` instead. */
  toolResult?: unknown;
}

/** Size in bytes of base64 data. */
function base64Bytes(data: string | undefined): number {
  if (!data) return 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

export interface McpToolData {
  /** The server's structured result, when it sent one. */
  structuredContent?: unknown;
  /** Parts the model saw only as a note. */
  omitted?: Array<{ type: string; mimeType?: string; bytes?: number; uri?: string }>;
  /** Images sent to the model as images (`images: 'attach'`). */
  attached?: Array<{ type: 'image'; mimeType: string; bytes: number }>;
}

export interface MapCallToolResultOptions {
  /** `note` (default): images become a note in the text; `attach`: they go to the model as images. */
  images?: 'note' | 'attach';
}

export function mapCallToolResult(
  result: McpCallResultLike,
  options: MapCallToolResultOptions = {},
): ToolOutput {
  if (result.toolResult !== undefined && result.content === undefined) {
    return {
      content: typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult),
    };
  }
  const parts = Array.isArray(result.content) ? (result.content as ContentPart[]) : [];
  const texts: string[] = [];
  const omitted: NonNullable<McpToolData['omitted']> = [];
  const attached: NonNullable<McpToolData['attached']> = [];
  const images: ImageUrlContentPart[] = [];
  for (const part of parts) {
    if (
      options.images === 'attach' &&
      part.type === 'image' &&
      typeof part.data === 'string' &&
      part.data.length > 0 &&
      typeof part.mimeType === 'string' &&
      part.mimeType.startsWith('image/')
    ) {
      const bytes = base64Bytes(part.data);
      attached.push({ type: 'image', mimeType: part.mimeType, bytes });
      images.push({ type: 'image_url', image_url: { url: `data:${part.mimeType};base64,${part.data}` } });
      texts.push(
        `[image ${part.mimeType} of ${bytes} bytes: sent as image ${images.length} in the next message]`,
      );
      continue;
    }
    switch (part.type) {
      case 'text':
        texts.push(part.text ?? '');
        break;
      case 'image':
      case 'audio': {
        const bytes = base64Bytes(part.data);
        omitted.push({ type: part.type, ...(part.mimeType ? { mimeType: part.mimeType } : {}), bytes });
        texts.push(
          `[${part.type} ${part.mimeType ?? ''} of ${bytes} bytes omitted: tool results are text here]`,
        );
        break;
      }
      case 'resource': {
        const resource = part.resource ?? {};
        if (typeof resource.text === 'string') texts.push(resource.text);
        else {
          const bytes = base64Bytes(resource.blob);
          omitted.push({
            type: 'resource',
            ...(resource.mimeType ? { mimeType: resource.mimeType } : {}),
            bytes,
            ...(resource.uri ? { uri: resource.uri } : {}),
          });
          texts.push(
            `[resource ${resource.uri ?? ''} (${resource.mimeType ?? 'binary'}, ${bytes} bytes) omitted]`,
          );
        }
        break;
      }
      case 'resource_link':
        texts.push(`[resource link: ${part.uri ?? ''}${part.name ? ` (${part.name})` : ''}]`);
        break;
      default:
        omitted.push({ type: String(part.type) });
        texts.push(`[${String(part.type)} content omitted]`);
    }
  }
  const structured = result.structuredContent;
  if (texts.length === 0 && structured !== undefined) texts.push(JSON.stringify(structured));
  const data: McpToolData = {
    ...(structured !== undefined ? { structuredContent: structured } : {}),
    ...(omitted.length > 0 ? { omitted } : {}),
    ...(attached.length > 0 ? { attached } : {}),
  };
  return {
    content: texts.join('\n'),
    ...(images.length > 0 ? { images } : {}),
    ...(Object.keys(data).length > 0 ? { data } : {}),
    ...(result.isError === true ? { isError: true } : {}),
  };
}
