import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PerKeyThrottle } from './per-key-throttle.ts';

test('one go per key per interval; keys do not hold each other back', () => {
  let now = 0;
  const throttle = new PerKeyThrottle(2000, () => now);
  assert.equal(throttle.allow('a'), true);
  assert.equal(throttle.allow('b'), true);
  now = 1999;
  assert.equal(throttle.allow('a'), false);
  now = 2000;
  assert.equal(throttle.allow('a'), true);
  assert.equal(throttle.allow('a'), false);
  assert.equal(throttle.allow('b'), true);
});

test('a stream of events every 500 ms goes through once every 2 s', () => {
  let now = 0;
  const throttle = new PerKeyThrottle(2000, () => now);
  let passed = 0;
  for (; now < 60_000; now += 500) if (throttle.allow('cmd')) passed++;
  assert.equal(passed, 30);
});

test('keys whose interval is over are forgotten as the map grows', () => {
  let now = 0;
  const throttle = new PerKeyThrottle(2000, () => now);
  for (let i = 0; i < 1000; i++) throttle.allow(`ended-${i}`);
  now = 5000;
  for (let i = 0; i < 10; i++) throttle.allow(`running-${i}`);
  assert.ok(throttle.size <= 10, `${throttle.size} keys kept`);
});
