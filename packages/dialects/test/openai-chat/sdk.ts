/**
 * The official openai-node client as the judge of what iop sends an OpenAI client: its SSE parser
 * (`Stream.fromSSEResponse`, which throws on an `error` payload) and its `ChatCompletionStream`
 * accumulator (which checks roles, tool-call identity and finish reasons; docs/protocols.md "Chat stream").
 */
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import { Stream } from 'openai/core/streaming';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

/** Parses an SSE body as the SDK does and returns the chunks. */
export async function sdkChunks(sse: string): Promise<ChatCompletionChunk[]> {
  const stream = Stream.fromSSEResponse<ChatCompletionChunk>(new Response(sse), new AbortController());
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Runs an SSE body through the SDK's parser and accumulator; resolves to the final completion. */
export async function sdkAccumulate(sse: string): Promise<ChatCompletion> {
  const stream = Stream.fromSSEResponse<ChatCompletionChunk>(new Response(sse), new AbortController());
  const runner = ChatCompletionStream.fromReadableStream(stream.toReadableStream());
  return runner.finalChatCompletion();
}
