import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idempotencyKeyProblem, isStorableStatus, MAX_IDEMPOTENCY_KEY_LENGTH, requestFingerprint } from './idempotency-key.ts';

test('keys of 1 to 255 printable ASCII characters are valid', () => {
  for (const key of [
    'a',
    ' ',
    '~',
    'order-42:2026-11-28',
    'x'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH),
    ' !"#$%&\'()*+,-./0-9:;<=>?@[\\]^_`{|}~',
  ]) {
    assert.equal(idempotencyKeyProblem(key), null, key);
  }
});

test('empty, too long, control, non-ASCII and DEL characters are refused', () => {
  assert.match(idempotencyKeyProblem('')!, /empty/);
  assert.match(idempotencyKeyProblem('x'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH + 1))!, /at most 255/);
  assert.match(idempotencyKeyProblem('x'.repeat(10_240))!, /at most 255/);
  for (const key of ['a\tb', 'a\nb', 'a\u0000b', 'a\u007fb', 'é', 'a\u00ffb', '\u{1F600}', 'a\rb']) {
    assert.match(idempotencyKeyProblem(key)!, /printable ASCII/, JSON.stringify(key));
  }
});

test('the fingerprint depends on method, path and every body byte', () => {
  const body = new TextEncoder().encode('{"a":1}');
  const base = requestFingerprint('POST', '/v1/run-ffmpeg-command', body);
  assert.match(base, /^[0-9a-f]{64}$/);
  assert.equal(requestFingerprint('post', '/v1/run-ffmpeg-command', new TextEncoder().encode('{"a":1}')), base);
  assert.notEqual(requestFingerprint('POST', '/v1/run-chained-ffmpeg-commands', body), base);
  assert.notEqual(requestFingerprint('PUT', '/v1/run-ffmpeg-command', body), base);
  assert.notEqual(requestFingerprint('POST', '/v1/run-ffmpeg-command', new TextEncoder().encode('{"a": 1}')), base);
  assert.notEqual(requestFingerprint('POST', '/v1/run-ffmpeg-command', new Uint8Array()), base);
  // No ambiguity between where the path ends and the body begins.
  assert.notEqual(
    requestFingerprint('POST', '/v1/x\n', new TextEncoder().encode('y')),
    requestFingerprint('POST', '/v1/x', new TextEncoder().encode('\ny')),
  );
});

test('2xx and 4xx answers are kept, 429 and 5xx are not', () => {
  for (const s of [200, 201, 202, 400, 403, 404, 409, 413, 422]) assert.equal(isStorableStatus(s), true, String(s));
  for (const s of [100, 301, 429, 500, 503, 507]) assert.equal(isStorableStatus(s), false, String(s));
});
