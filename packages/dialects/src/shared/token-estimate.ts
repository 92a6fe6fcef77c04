/**
 * Token estimates without a tokenizer (docs/protocols.md "Token counting"): the text a chat backend's tokenizer would
 * count for an `InferenceRequest`, and an estimate of its tokens. Every dialect's requests are estimated the same way
 * (count_tokens without an exact count, the output limit, a usage estimate for a request that ended without one).
 */
import type { ContentPart, InferenceRequest, Message } from '@iop/core';

/** Tokens charged per image when its size is unknown: Anthropic's cap for one image (~1.15 megapixels / 750). */
export const IMAGE_TOKENS_ESTIMATE = 1600;
/** Tokens per message for the chat template's role markers (e.g. `<|im_start|>user\n … <|im_end|>\n`). */
export const MESSAGE_OVERHEAD_TOKENS = 4;

function partText(part: ContentPart): string {
  return part.type === 'text' ? part.text : '';
}

function messageText(message: Message): string {
  switch (message.role) {
    case 'system':
    case 'developer':
    case 'user':
      return message.content.map(partText).join('');
    case 'tool':
      return message.content.map(partText).join('');
    case 'assistant':
      return message.content
        .map((part) => {
          if (part.type === 'tool-call') return `${part.name}(${part.arguments})`;
          if (part.type === 'reasoning') return part.redacted === true ? '' : part.text;
          return part.text;
        })
        .join('');
  }
}

/**
 * The text a tokenizer should count, rendered as a chat backend sees the request: one
 * `<role>\n<text>\n` section per message, then one JSON line per tool definition
 * (`{name, description, parameters}`). Images and files are not text; `estimateRequestTokens`
 * adds a fixed cost for them.
 */
export function renderCountTokensText(request: InferenceRequest): string {
  let text = '';
  for (const message of request.messages) text += `${message.role}\n${messageText(message)}\n`;
  for (const tool of request.tools ?? []) {
    text += `${JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters })}\n`;
  }
  return text;
}

/**
 * Estimates the tokens of a text without a tokenizer: ¼ token per ASCII character (BPE
 * tokenizers average ~4 characters of English or code per token), 1 per CJK character (Han,
 * kana, hangul: about one token each), ½ per other UTF-16 code unit (accented Latin, Cyrillic,
 * emoji halves). Rounded up. Typically within ±25 % of a real tokenizer.
 */
export function estimateTokens(text: string): number {
  let tokens = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) tokens += 0.25;
    else if ((code >= 0x2e80 && code <= 0x9fff) || (code >= 0xac00 && code <= 0xd7af)) tokens += 1;
    else tokens += 0.5;
  }
  return Math.ceil(tokens);
}

function attachmentTokens(parts: readonly ContentPart[]): number {
  let tokens = 0;
  for (const part of parts) {
    if (part.type === 'image') tokens += IMAGE_TOKENS_ESTIMATE;
    // A file's decoded size is ¾ of its base64 length; ~4 bytes of PDF per token is a rough average.
    else if (part.type === 'file') tokens += Math.ceil((part.data.length * 3) / 4 / 4);
  }
  return tokens;
}

/** Estimated prompt tokens of a request: text, per-message overhead, images and files. */
export function estimateRequestTokens(request: InferenceRequest): number {
  let tokens = estimateTokens(renderCountTokensText(request)) + request.messages.length * MESSAGE_OVERHEAD_TOKENS;
  for (const message of request.messages) {
    if (message.role === 'user' || message.role === 'tool') tokens += attachmentTokens(message.content);
  }
  return tokens;
}
