/**
 * The dialect registry's route table: exact and parameterised endpoints (a model with slashes and
 * colons), the claimed `GET /v1/models`, the dialect a failure is rendered in, the key sources of
 * a path, and the methods for a 405.
 */
import { anthropicMessages, gemini, openaiChat, openaiResponses } from '@iop/dialects';
import { RouteTable, type RouteEntry } from '../../../src/http/route-table.js';

const dialects = [openaiChat, anthropicMessages, openaiResponses, gemini];
const entries: Array<RouteEntry<string>> = dialects.flatMap((dialect) =>
  dialect.endpoints.map((endpoint) => ({
    dialect,
    endpoint,
    handler: `${dialect.name} ${endpoint.role} ${endpoint.operation ?? ''}`.trim(),
  })),
);
const table = new RouteTable(entries);

describe('RouteTable', () => {
  it('matches exact paths, with or without a query', () => {
    expect(table.match('POST', '/v1/chat/completions')?.entry.handler).toBe('openai-chat inference');
    expect(table.match('POST', '/v1/messages?beta=true')?.entry.handler).toBe('anthropic-messages inference');
    expect(table.match('POST', '/v1/messages/count_tokens')?.entry.handler).toBe('anthropic-messages count-tokens');
    expect(table.match('GET', '/v1/chat/completions')).toBeUndefined();
    expect(table.match('POST', '/v1/chat/completions/')).toBeUndefined();
  });

  it('matches Gemini’s colon verbs up to the last colon, the model percent-decoded, under each version', () => {
    const match = table.match('POST', '/v1beta/models/Qwen/Qwen3-8B:streamGenerateContent?alt=sse');
    expect(match?.entry.handler).toBe('gemini inference streamGenerateContent');
    expect(match?.params).toEqual({ model: 'Qwen/Qwen3-8B' });
    expect(match?.query.get('alt')).toBe('sse');
    expect(table.match('POST', '/v1/models/qwen3:8b:generateContent')?.params).toEqual({ model: 'qwen3:8b' });
    expect(table.match('POST', '/v1alpha/models/a%2Fb:countTokens')?.params).toEqual({ model: 'a/b' });
    expect(table.match('POST', '/v1beta/models/:generateContent')).toBeUndefined();
    expect(() => table.match('POST', '/v1beta/models/%E0%A4%A:generateContent')).toThrow(URIError);
    expect(table.match('GET', '/v1beta/models/gemini-2.5-pro')?.entry.handler).toBe('gemini model-get');
    // OpenAI's "retrieve model" path is not Google's models.get.
    expect(table.match('GET', '/v1/models/gpt-4o')).toBeUndefined();
  });

  it('gives GET /v1/models to the dialect that claims the request, else OpenAI; HEAD as GET', () => {
    expect(table.match('GET', '/v1/models')?.entry.dialect.name).toBe('openai-chat');
    expect(table.match('HEAD', '/v1/models')?.entry.dialect.name).toBe('openai-chat');
    expect(table.match('GET', '/v1/models', { 'anthropic-version': '2023-06-01' })?.entry.dialect.name).toBe(
      'anthropic-messages',
    );
    expect(table.match('GET', '/v1/models', { 'x-goog-api-key': 'k' })?.entry.dialect.name).toBe('gemini');
    expect(table.match('GET', '/v1/models?key=k')?.entry.dialect.name).toBe('gemini');
  });

  it('renders failures in the dialect of the endpoint, else of the longest path prefix', () => {
    expect(table.dialectFor('/v1/messages')?.name).toBe('anthropic-messages');
    expect(table.dialectFor('/v1/messages/nope')?.name).toBe('anthropic-messages');
    expect(table.dialectFor('/v1/models')?.name).toBe('openai-chat');
    expect(table.dialectFor('/v1/models/x:generateContent')?.name).toBe('gemini');
    expect(table.dialectFor('/v1beta/files')?.name).toBe('gemini');
    expect(table.dialectFor('/v1/nope')?.name).toBe('openai-chat');
    expect(table.dialectFor('/healthz')?.name).toBe('openai-chat');
  });

  it('takes every dialect’s key headers on every path, the query parameter only on Gemini’s', () => {
    expect(table.keySources('/v1/chat/completions')).toEqual({ headers: ['x-api-key', 'x-goog-api-key'], named: [] });
    expect(table.keySources('/v1beta/models/m:generateContent')).toEqual({
      headers: ['x-api-key', 'x-goog-api-key'],
      named: ['x-goog-api-key'],
      queryParam: 'key',
    });
  });

  it('lists the methods served on a path (a 405’s Allow)', () => {
    expect(table.allowed('/v1/models')).toEqual(['GET']);
    expect(table.allowed('/v1beta/models/m:generateContent')).toEqual(['POST']);
    expect(table.allowed('/v1beta/models/m')).toEqual(['GET']);
    expect(table.allowed('/nowhere')).toEqual([]);
  });
});
