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

test('FFOP_MAX_EVENT_STREAMS_PER_KEY, FFOP_MAX_EVENT_STREAMS, FFOP_EVENT_STREAM_LIFETIME_SECONDS: 20, 5,000, 1 h by default; anything but a positive number stops the start', () => {
  assert.equal(loadConfig({}).maxEventStreamsPerKey, 20);
  assert.equal(loadConfig({}).maxEventStreams, 5_000);
  assert.equal(loadConfig({}).eventStreamLifetimeSeconds, 3_600);
  assert.equal(loadConfig({ FFOP_EVENT_STREAM_LIFETIME_SECONDS: '60' }).eventStreamLifetimeSeconds, 60);
  const set = loadConfig({ FFOP_MAX_EVENT_STREAMS_PER_KEY: '3', FFOP_MAX_EVENT_STREAMS: '100' });
  assert.equal(set.maxEventStreamsPerKey, 3);
  assert.equal(set.maxEventStreams, 100);
  for (const name of ['FFOP_MAX_EVENT_STREAMS_PER_KEY', 'FFOP_MAX_EVENT_STREAMS', 'FFOP_EVENT_STREAM_LIFETIME_SECONDS']) {
    for (const bad of ['0', '-1', 'many'])
      assert.throws(() => loadConfig({ [name]: bad }), new RegExp(`${name} must be a positive number`));
  }
});
