import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DatabaseUnavailable, isDatabaseUnavailable } from './unavailable.ts';

/** An error as postgres.js hands it to a query: its own code, and `query` added. */
function fromDriver(code: string): Error {
  return Object.assign(new Error(code), { code, query: 'select 1' });
}

test('connection errors of the driver, PostgreSQL shutting down or full, and the refusal itself count', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED'])
    assert.ok(isDatabaseUnavailable(fromDriver(code)), code);
  for (const code of ['57P01', '57P02', '57P03', '08006', '08001', '53300'])
    assert.ok(isDatabaseUnavailable(Object.assign(new Error('server'), { code })), code);
  assert.ok(isDatabaseUnavailable(new DatabaseUnavailable()));
});

test('an error wrapped by drizzle counts by its cause, as does an AggregateError of refused addresses', () => {
  const wrapped = new Error('Failed query: select 1', { cause: fromDriver('ECONNREFUSED') });
  assert.ok(isDatabaseUnavailable(wrapped));
  const both = Object.assign(new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' })], 'connect'), {
    query: 'select 1',
  });
  assert.ok(isDatabaseUnavailable(both));
});

test('a bad statement, a constraint, a timeout of a statement or a refused HTTP download do not count', () => {
  for (const code of ['42P01', '23505', '57014', '22P02'])
    assert.ok(!isDatabaseUnavailable(Object.assign(new Error('server'), { code })), code);
  // undici's fetch: the socket error in `cause`, never through postgres.js.
  assert.ok(!isDatabaseUnavailable(new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) })));
  assert.ok(!isDatabaseUnavailable(new Error('boom')));
  assert.ok(!isDatabaseUnavailable(null));
  assert.ok(!isDatabaseUnavailable('ECONNREFUSED'));
});
