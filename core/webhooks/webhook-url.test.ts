import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAddressPolicy } from '../net/address-policy.ts';
import { webhookUrlProblem } from './webhook-url.ts';

const none = createAddressPolicy([]);

test('public http(s) URLs and host names are accepted', () => {
  for (const url of [
    'https://example.com/hooks',
    'http://hooks.example.com:8080/a?token=x',
    'https://8.8.8.8/x',
    'https://[2606:4700::1]/x',
  ]) {
    assert.equal(webhookUrlProblem(url, none), null, url);
  }
  // Names are resolved and checked when sending, not here.
  assert.equal(webhookUrlProblem('http://localhost:9000/x', none), null);
});

test('non-public IP literals are refused unless the allowlist names them', () => {
  for (const url of [
    'http://127.0.0.1/x',
    'http://169.254.169.254/latest',
    'http://[::1]:8080/',
    'http://10.1.2.3/',
    'http://[::ffff:127.0.0.1]/',
  ]) {
    assert.match(webhookUrlProblem(url, none) ?? '', /not a public address/, url);
  }
  assert.equal(webhookUrlProblem('http://127.0.0.1:9000/x', createAddressPolicy(['127.0.0.1:9000'])), null);
  assert.match(webhookUrlProblem('http://127.0.0.1:9001/x', createAddressPolicy(['127.0.0.1:9000'])) ?? '', /not a public address/);
});

test('other schemes, credentials, bad URLs and URLs over 2048 characters are refused', () => {
  assert.match(webhookUrlProblem('ftp://example.com/x', none) ?? '', /http or https/);
  assert.match(webhookUrlProblem('https://user:pw@example.com/x', none) ?? '', /credentials/);
  assert.match(webhookUrlProblem('not a url', none) ?? '', /not a valid URL/);
  assert.match(webhookUrlProblem(`https://example.com/${'a'.repeat(2048)}`, none) ?? '', /2048/);
});
