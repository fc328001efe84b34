import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CONNECT_TIMEOUT_SECONDS,
  mainPoolSize,
  MAX_RECONNECT_DELAY_SECONDS,
  outageOptions,
  REMOTE_POOL_SIZE,
  STATEMENT_TIMEOUT_MS,
} from './postgres-pool.ts';

const noEnv = {};

test('a server on this machine gets as many connections as there are cores, at least 2 and at most 10', () => {
  for (const url of [
    'postgres://postgres@127.0.0.1:55432/postgres',
    'postgres://u:p@localhost/db',
    'postgres://u@[::1]:5432/db',
    'postgres://u@127.1.2.3/db',
    'postgres:///db',
  ]) {
    assert.equal(mainPoolSize(url, 2, noEnv), 2, url);
    assert.equal(mainPoolSize(url, 1, noEnv), 2, url);
    assert.equal(mainPoolSize(url, 6, noEnv), 6, url);
    assert.equal(mainPoolSize(url, 64, noEnv), REMOTE_POOL_SIZE, url);
  }
});

test('a server elsewhere keeps the pool of 10', () => {
  for (const url of [
    'postgres://u@db.internal:5432/ffop',
    'postgres://u@10.0.0.5/ffop',
    'postgresql://u@[2001:db8::1]/ffop',
    'postgres://u@128.0.0.1/ffop',
    'postgres://u@h1:5432,h2:5432/ffop', // several hosts: postgres.js reads it, URL does not
  ]) {
    assert.equal(mainPoolSize(url, 2, noEnv), REMOTE_POOL_SIZE, url);
  }
});

test('without a host in the URL, PGHOST decides, as it does for postgres.js', () => {
  assert.equal(mainPoolSize('postgres:///db', 2, { PGHOST: 'db.internal' }), REMOTE_POOL_SIZE);
  assert.equal(mainPoolSize('postgres:///db', 2, { PGHOST: '/var/run/postgresql' }), 2);
});

test('max in the URL sets the size; anything but a whole number of 1 or more is refused, naming the setting', () => {
  assert.equal(mainPoolSize('postgres://u@127.0.0.1/db?max=7', 2, noEnv), 7);
  assert.equal(mainPoolSize('postgres://u@db.internal/db?sslmode=require&max=3', 2, noEnv), 3);
  assert.equal(mainPoolSize('postgres://u@h1:5432,h2:5432/db?max=4', 2, noEnv), 4);
  for (const bad of ['0', '-1', '2.5', 'ten', '']) {
    assert.throws(
      () => mainPoolSize(`postgres://u@db.internal/db?max=${bad}`, 2, noEnv),
      /FFOP_DATABASE_URL: max must be a whole number/,
      bad,
    );
  }
});

test('pools time out connecting and statements, and wait at most a second between failed connections; the URL may say otherwise', () => {
  const o = outageOptions('postgres://u@db.internal/ffop');
  assert.equal(o.connect_timeout, CONNECT_TIMEOUT_SECONDS);
  assert.equal(o.connection.statement_timeout, STATEMENT_TIMEOUT_MS);
  for (const retries of [0, 1, 5, 50]) assert.ok(o.backoff(retries) <= MAX_RECONNECT_DELAY_SECONDS, String(retries));
  // postgres.js reads connect_timeout from the URL only when the options leave it out.
  assert.equal('connect_timeout' in outageOptions('postgres://u@db.internal/ffop?connect_timeout=20'), false);
});
