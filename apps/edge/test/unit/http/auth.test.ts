import type { NextFunction, Request, Response } from 'express';
import { IopError } from '@iop/core';
import { keyHint, OPEN_EDGE_OWNER, ownerOfKey, presentedKey } from '../../../src/http/auth.js';
import { keyCheck } from '../../../src/http/key-check.js';
import type { EdgeContext } from '../../../src/edge-context.js';
import type { RequestLocals } from '../../../src/http/request-context.js';

/**
 * Runs the key check (plain `apiKeys` only, no key store) on a request with `headers`; resolves with what it passed to
 * next and the locals it left.
 */
async function check(
  keys: readonly string[] | (() => readonly string[]),
  headers: Record<string, string>,
): Promise<{ error: unknown; locals: Partial<RequestLocals> }> {
  const current = typeof keys === 'function' ? keys : () => keys;
  const edge = {
    get config() {
      return { apiKeys: current() };
    },
  } as unknown as EdgeContext;
  const req = { headers } as unknown as Request;
  const res = { locals: {} } as unknown as Response;
  let error: unknown = 'next not called';
  const next: NextFunction = (value?: unknown) => {
    error = value;
  };
  await keyCheck(edge)(req, res, next);
  return { error, locals: res.locals as Partial<RequestLocals> };
}

describe('ownerOfKey', () => {
  it('is the SHA-256 of the key, lowercase hex (FIPS 180-2 test vector "abc")', () => {
    expect(ownerOfKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(ownerOfKey('sk-1')).not.toBe(ownerOfKey('sk-2'));
  });
});

describe('keyCheck owner (plain apiKeys)', () => {
  it('sets the owner of the presented key, by Bearer or x-api-key alike, and never the key itself', async () => {
    const bearer = await check(['k1', 'k2'], { authorization: 'Bearer k2' });
    expect(bearer.error).toBeUndefined();
    expect(bearer.locals.owner).toBe(ownerOfKey('k2'));
    expect(bearer.locals.identity?.keyId).toBe(`legacy:${ownerOfKey('k2').slice(0, 12)}`);
    const xApiKey = await check(['k1', 'k2'], { 'x-api-key': 'k2' });
    expect(xApiKey.locals.owner).toBe(ownerOfKey('k2'));
    expect((await check(['k1', 'k2'], { authorization: 'Bearer k1' })).locals.owner).toBe(ownerOfKey('k1'));
  });

  it("gives every request the open edge's owner ('') when no keys are configured, whatever key is sent", async () => {
    expect(OPEN_EDGE_OWNER).toBe('');
    expect((await check([], {})).locals.owner).toBe('');
    expect((await check([], { authorization: 'Bearer anything' })).locals.owner).toBe('');
  });

  it('sets no owner on a rejected request', async () => {
    const missing = await check(['k1'], {});
    expect(missing.error).toBeInstanceOf(IopError);
    expect((missing.error as IopError).status).toBe(401);
    expect(missing.locals.owner).toBeUndefined();
    const wrong = await check(['k1'], { authorization: 'Bearer k2' });
    expect((wrong.error as IopError).message).toBe('invalid API key');
    expect(wrong.locals.owner).toBeUndefined();
  });

  it('keeps the owner of a key across a reload of the key list (the owner follows the key, not its position)', async () => {
    let keys = ['k1', 'k2'];
    const before = (await check(() => keys, { authorization: 'Bearer k2' })).locals.owner;
    keys = ['k2', 'k3'];
    expect((await check(() => keys, { authorization: 'Bearer k2' })).locals.owner).toBe(before);
    expect(((await check(() => keys, { authorization: 'Bearer k1' })).error as IopError).status).toBe(401);
  });
});

describe('presentedKey', () => {
  const request = (headers: Record<string, string>, url = '/v1beta/models') => ({ headers, url }) as unknown as Request;
  const gemini = { headers: ['x-api-key', 'x-goog-api-key'], named: ['x-goog-api-key'], queryParam: 'key' };

  it('reads the sources in order: key headers, then Bearer, then the query parameter', () => {
    expect(
      presentedKey(request({ 'x-goog-api-key': 'g', authorization: 'Bearer b' }, '/v1beta/models?key=q'), gemini),
    ).toBe('g');
    expect(presentedKey(request({ authorization: 'Bearer b' }, '/v1beta/models?key=q'), gemini)).toBe('b');
    expect(presentedKey(request({}, '/v1beta/models/m:generateContent?alt=sse&key=q%2B1'), gemini)).toBe('q+1');
  });

  it('treats an empty header or parameter as none (Gemini CLI sends an empty x-goog-api-key without a key)', () => {
    expect(presentedKey(request({ 'x-goog-api-key': '' }, '/v1beta/models?key='), gemini)).toBeUndefined();
    expect(presentedKey(request({ 'x-goog-api-key': '' }, '/v1beta/models?key=q'), gemini)).toBe('q');
  });

  it('reads no query parameter where the dialect has none', () => {
    expect(
      presentedKey(request({}, '/v1/chat/completions?key=q'), { headers: ['x-api-key', 'x-goog-api-key'] }),
    ).toBeUndefined();
  });

  it('tells a client without a key where its dialect takes one', () => {
    expect(keyHint(gemini)).toBe('`Authorization: Bearer <key>`, `x-goog-api-key: <key>` or `?key=<key>`');
    expect(keyHint({ headers: ['x-api-key'], named: [] })).toBe('`Authorization: Bearer <key>`');
  });
});
