// Settings that need more than a lookup: webhooks' own allowlist and the delivery retention.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from './config.ts';

test('webhooks do not inherit the input downloads allowlist; FFOP_WEBHOOK_ALLOW_ADDRESSES is their own', () => {
  const downloadsOnly = loadConfig({ FFOP_ALLOW_ADDRESSES: '127.0.0.1:9000, 10.1.0.0/16' });
  assert.deepEqual(downloadsOnly.allowAddresses, ['127.0.0.1:9000', '10.1.0.0/16']);
  assert.deepEqual(downloadsOnly.webhookAllowAddresses, []);
  const both = loadConfig({ FFOP_ALLOW_ADDRESSES: '127.0.0.1:9000', FFOP_WEBHOOK_ALLOW_ADDRESSES: 'hooks.internal:443,,' });
  assert.deepEqual(both.webhookAllowAddresses, ['hooks.internal:443']);
});

test('FFOP_WEBHOOK_RETENTION_SECONDS: 30 days by default; anything but a positive number stops the start', () => {
  assert.equal(loadConfig({}).webhookRetentionSeconds, 30 * 86400);
  assert.equal(loadConfig({ FFOP_WEBHOOK_RETENTION_SECONDS: '3600' }).webhookRetentionSeconds, 3600);
  for (const bad of ['0', '-1', 'a week']) {
    assert.throws(() => loadConfig({ FFOP_WEBHOOK_RETENTION_SECONDS: bad }), /FFOP_WEBHOOK_RETENTION_SECONDS must be a positive number/);
  }
});
