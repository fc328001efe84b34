import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  assertSigningKey,
  checkSignedQuery,
  EXPIRES_PARAM,
  SIGNATURE_PARAM,
  signedQuery,
  signRequest,
  stringToSign,
} from './url-signing.ts';
import type { SignedRequest } from './url-signing.ts';

const SECRET = 'url-signing-test-secret-32-bytes!';
const NOW = 1_700_000_000;
const GET_REQUEST: SignedRequest = { method: 'GET', key: 'acct/cmd/out.mp4', expires: NOW + 60 };

function queryFor(req: SignedRequest, secret = SECRET): URLSearchParams {
  return new URLSearchParams(signedQuery(secret, req));
}

describe('url signing', () => {
  test('the signed string is method, key, expiry, upload id and part number, one per line', () => {
    assert.equal(stringToSign(GET_REQUEST), `GET\nacct/cmd/out.mp4\n${NOW + 60}\n\n`);
    assert.equal(stringToSign({ method: 'PUT', key: 'k/f.bin', expires: 5, uploadId: 'up-1', partNumber: 3 }), 'PUT\nk/f.bin\n5\nup-1\n3');
    // A part URL binds its size as a sixth field; URLs without one keep the five-field string.
    assert.equal(
      stringToSign({ method: 'PUT', key: 'k/f.bin', expires: 5, uploadId: 'up-1', partNumber: 3, partSize: 100 }),
      'PUT\nk/f.bin\n5\nup-1\n3\n100',
    );
  });

  test('the signature is hex HMAC-SHA256 of that string', () => {
    const expected = createHmac('sha256', SECRET).update(stringToSign(GET_REQUEST)).digest('hex');
    assert.equal(signRequest(SECRET, GET_REQUEST), expected);
    const query = queryFor(GET_REQUEST);
    assert.equal(query.get(EXPIRES_PARAM), String(NOW + 60));
    assert.equal(query.get(SIGNATURE_PARAM), expected);
  });

  test('a genuine query is accepted up to and including its expiry second', () => {
    const query = queryFor(GET_REQUEST);
    const target = { method: 'GET' as const, key: GET_REQUEST.key };
    assert.deepEqual(checkSignedQuery(SECRET, target, query, NOW), { ok: true });
    assert.deepEqual(checkSignedQuery(SECRET, target, query, NOW + 60), { ok: true });
    assert.deepEqual(checkSignedQuery(SECRET, target, query, NOW + 61), { ok: false, reason: 'expired' });
  });

  test('another method, key, expiry, secret or part is refused as invalid', () => {
    const query = queryFor(GET_REQUEST);
    const invalid = { ok: false, reason: 'invalid' };
    assert.deepEqual(checkSignedQuery(SECRET, { method: 'PUT', key: GET_REQUEST.key }, query, NOW), invalid);
    assert.deepEqual(checkSignedQuery(SECRET, { method: 'GET', key: 'acct/cmd/other.mp4' }, query, NOW), invalid);
    assert.deepEqual(checkSignedQuery('another-secret-of-enough-length', { method: 'GET', key: GET_REQUEST.key }, query, NOW), invalid);
    assert.deepEqual(checkSignedQuery(SECRET, { method: 'GET', key: GET_REQUEST.key, uploadId: 'u', partNumber: 1 }, query, NOW), invalid);

    const laterExpiry = new URLSearchParams(query);
    laterExpiry.set(EXPIRES_PARAM, String(NOW + 999_999));
    assert.deepEqual(checkSignedQuery(SECRET, { method: 'GET', key: GET_REQUEST.key }, laterExpiry, NOW), invalid);
  });

  test('part uploads are bound to their upload id and part number', () => {
    const part: SignedRequest = { method: 'PUT', key: 'k/big.mp4', expires: NOW + 60, uploadId: 'abc', partNumber: 2 };
    const query = queryFor(part);
    const target = { method: 'PUT' as const, key: part.key, uploadId: 'abc' };
    assert.deepEqual(checkSignedQuery(SECRET, { ...target, partNumber: 2 }, query, NOW), { ok: true });
    assert.deepEqual(checkSignedQuery(SECRET, { ...target, partNumber: 3 }, query, NOW), { ok: false, reason: 'invalid' });
  });

  test('missing and malformed parameters are refused before any HMAC comparison', () => {
    const target = { method: 'GET' as const, key: GET_REQUEST.key };
    const good = queryFor(GET_REQUEST);
    assert.deepEqual(checkSignedQuery(SECRET, target, new URLSearchParams(), NOW), { ok: false, reason: 'missing' });
    const noSignature = new URLSearchParams(good);
    noSignature.delete(SIGNATURE_PARAM);
    assert.deepEqual(checkSignedQuery(SECRET, target, noSignature, NOW), { ok: false, reason: 'missing' });

    for (const [name, value] of [
      [EXPIRES_PARAM, '-5'],
      [EXPIRES_PARAM, '1e9'],
      [EXPIRES_PARAM, ''],
      [EXPIRES_PARAM, '1234567890123'],
      [SIGNATURE_PARAM, 'abc'],
      [SIGNATURE_PARAM, 'z'.repeat(64)],
      [SIGNATURE_PARAM, `${good.get(SIGNATURE_PARAM)}00`],
    ]) {
      const query = new URLSearchParams(good);
      query.set(name, value);
      assert.deepEqual(checkSignedQuery(SECRET, target, query, NOW), { ok: false, reason: 'malformed' }, `${name}=${value}`);
    }
  });

  test('a signature in upper-case hex is the same signature', () => {
    const query = queryFor(GET_REQUEST);
    query.set(SIGNATURE_PARAM, (query.get(SIGNATURE_PARAM) as string).toUpperCase());
    assert.deepEqual(checkSignedQuery(SECRET, { method: 'GET', key: GET_REQUEST.key }, query, NOW), { ok: true });
  });

  test('signing keys shorter than 16 bytes are refused', () => {
    assert.throws(() => assertSigningKey(''));
    assert.throws(() => assertSigningKey('fifteen-chars!!'));
    assert.doesNotThrow(() => assertSigningKey('sixteen-chars!!!'));
    assert.doesNotThrow(() => assertSigningKey(new Uint8Array(32)));
  });
});
