import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import * as v from 'valibot';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth.ts';
import { jsonBody, RequestInvalid } from './validation.ts';

test('depth counts arrays and objects outside strings, escapes included', () => {
  assert.equal(jsonDepthExceeds('{"a":[1,{"b":2}]}', 3), false);
  assert.equal(jsonDepthExceeds('{"a":[1,{"b":2}]}', 2), true);
  assert.equal(jsonDepthExceeds('"[[[[[[["', 1), false);
  assert.equal(jsonDepthExceeds('{"k\\"[[[[": "\\\\"}', 1), false);
  assert.equal(jsonDepthExceeds('[[[]],[[]]]', 3), false);
  assert.equal(jsonDepthExceeds('1', 0), false);
});

/** The same error mapping as api/app/create-app.ts: RequestInvalid is a 422, anything else a 500. */
function appWith(schema: v.GenericSchema): Hono {
  const app = new Hono();
  app.onError((err, c) =>
    err instanceof RequestInvalid ? c.json({ detail: err.detail }, 422) : c.json({ detail: 'Internal Server Error' }, 500),
  );
  app.post('/x', async (c) => c.json(await jsonBody(c, schema)));
  return app;
}

test('attack: a deeply nested body is a 422 naming the limit, not a stack overflow', async () => {
  const app = appWith(v.object({ metadata: v.optional(v.unknown()) }));
  for (const nested of ['['.repeat(200_000) + ']'.repeat(200_000), '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)]) {
    const res = await app.request('/x', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"metadata":${nested}}`,
    });
    assert.equal(res.status, 422);
    const body = await res.json();
    assert.equal(body.detail[0].type, 'json_invalid');
    assert.deepEqual(body.detail[0].loc, ['body']);
    assert.match(body.detail[0].msg, new RegExp(`nested deeper than ${MAX_JSON_DEPTH} levels`));
  }
  const ok = await app.request('/x', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"metadata":{"a":[[1]]}}' });
  assert.equal(ok.status, 200);
});
