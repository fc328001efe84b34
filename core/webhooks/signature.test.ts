// Signatures checked by the Standard Webhooks reference library (the `standardwebhooks` package), as a
// receiver would check them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { newWebhookSecret, signedHeaders, signWebhook } from './signature.ts';

const body = JSON.stringify({
  data: { command_id: '6f0c2c1e-8a63-4d5e-9b1a-3f2d4c5b6a70', status: 'SUCCESS' },
  timestamp: 1_700_000_000_000,
});

test('a new secret is whsec_ + base64 of 24 random bytes, different every time', () => {
  const a = newWebhookSecret();
  assert.match(a, /^whsec_[A-Za-z0-9+/]{32}$/);
  assert.equal(Buffer.from(a.slice(6), 'base64').length, 24);
  assert.notEqual(a, newWebhookSecret());
});

test('the reference library verifies the signed headers and returns the payload', () => {
  const secret = newWebhookSecret();
  const headers = signedHeaders(secret, 'msg_6f0c2c1e-8a63-4d5e-9b1a-3f2d4c5b6a70', new Date(), body);
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  // The same signature as the library's own signer.
  const timestamp = new Date(Number(headers['webhook-timestamp']) * 1000);
  assert.equal(headers['webhook-signature'], new Webhook(secret).sign(headers['webhook-id'], timestamp, body));
});

test('another secret, another body, another id or an old timestamp do not verify', () => {
  const secret = newWebhookSecret();
  const headers = signedHeaders(secret, 'msg_1', new Date(), body);
  const rejects = (f: () => unknown) => assert.throws(f, WebhookVerificationError);
  rejects(() => new Webhook(newWebhookSecret()).verify(body, headers));
  rejects(() => new Webhook(secret).verify(body.replace('SUCCESS', 'FAILED'), headers));
  rejects(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_2' }));
  const old = signedHeaders(secret, 'msg_1', new Date(Date.now() - 3600_000), body);
  rejects(() => new Webhook(secret).verify(body, old));
});

test('the signature is v1, + base64 HMAC-SHA256 of "id.timestamp.body" keyed with the decoded secret', () => {
  // A known key (the 24 bytes 0x00..0x17) and time, against the reference signer.
  const secret = 'whsec_' + Buffer.from(Array.from({ length: 24 }, (_, i) => i)).toString('base64');
  const sig = signWebhook(secret, 'msg_x', 1_700_000_000, '{}');
  assert.equal(sig, new Webhook(secret).sign('msg_x', new Date(1_700_000_000_000), '{}'));
  assert.match(sig, /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.throws(() => signWebhook('not-a-secret', 'msg_x', 1, '{}'), /whsec_/);
});
