// Bad input: FastAPI-shaped 422s, 401s, 404s, oversized bodies. No request may produce a 500.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type ServiceFixture } from './harness.ts';

describe('request validation', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });

  const good = {
    ffmpeg_command: '-i {{in_1}} {{out_1}}',
    input_files: { in_1: 'https://example.com/a.mp4' },
    output_files: { out_1: 'o.mp4' },
  };

  async function expect422(body: unknown, loc: (string | number)[], type?: string, path = '/v1/run-ffmpeg-command', msg?: RegExp) {
    const res = await svc.client().request('POST', path, body);
    assert.equal(res.status, 422, `${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.body)}`);
    assert.ok(Array.isArray(res.body.detail), JSON.stringify(res.body));
    const item = res.body.detail.find((d: any) => JSON.stringify(d.loc) === JSON.stringify(loc));
    assert.ok(item, `no error at ${JSON.stringify(loc)} in ${JSON.stringify(res.body.detail)}`);
    assert.equal(typeof item.msg, 'string');
    if (type) assert.equal(item.type, type);
    if (msg) assert.match(item.msg, msg);
  }

  test('missing and mistyped fields', async () => {
    await expect422({ output_files: good.output_files }, ['body', 'ffmpeg_command'], 'missing');
    await expect422({ ffmpeg_command: '-i {{in_1}} {{out_1}}', input_files: good.input_files }, ['body', 'output_files'], 'missing');
    await expect422({ ...good, ffmpeg_command: 5 }, ['body', 'ffmpeg_command'], 'string_type');
    await expect422({ ...good, max_command_run_seconds: 0 }, ['body', 'max_command_run_seconds'], 'greater_than');
    await expect422({ ...good, max_command_run_seconds: 'soon' }, ['body', 'max_command_run_seconds'], 'float_parsing');
    await expect422({ ...good, vcpu_count: 1.5 }, ['body', 'vcpu_count'], 'int_from_float');
    await expect422({ ...good, vcpu_count: 0 }, ['body', 'vcpu_count'], 'greater_than');
    for (const notBoolean of ['maybe', 'true', 0, 1, null]) {
      await expect422({ ...good, is_private: notBoolean }, ['body', 'is_private'], 'bool_type');
    }
    const storeFile = { file_url: 'https://example.com/a.mp4', is_private: 0 };
    await expect422(storeFile, ['body', 'is_private'], 'bool_type', '/v1/files/store-file');
    const initUpload = { filename: 'a.mp4', size_bytes: 10, is_private: 'false' };
    await expect422(initUpload, ['body', 'is_private'], 'bool_type', '/v1/files/init-upload');
  });

  test('aliases, file names and URLs', async () => {
    await expect422({ ...good, input_files: { input1: 'https://example.com/a.mp4' } }, ['body', 'input_files', 'input1']);
    await expect422({ ...good, output_files: { result: 'o.mp4' } }, ['body', 'output_files', 'result']);
    await expect422({ ...good, output_files: { out_1: '../o.mp4' } }, ['body', 'output_files', 'out_1']);
    await expect422({ ...good, output_files: { out_1: 'dir/o.mp4' } }, ['body', 'output_files', 'out_1']);
    await expect422({ ...good, input_files: { in_1: 'file:///etc/passwd' } }, ['body', 'input_files', 'in_1'], 'url_parsing');
    await expect422({ ...good, input_files: { in_1: 'not a url' } }, ['body', 'input_files', 'in_1'], 'url_parsing');
    await expect422({ ...good, output_files: {} }, ['body', 'output_files']);
  });

  test('the command line: undeclared aliases, paths outside the folder, protocols, unterminated quotes', async () => {
    const cmd = (ffmpeg_command: string, rx: RegExp) =>
      expect422({ ...good, ffmpeg_command }, ['body', 'ffmpeg_command'], 'value_error', undefined, rx);
    await cmd('-i {{in_2}} {{out_1}}', /in_2/);
    await cmd('-i /etc/passwd {{out_1}}', /absolute|\/etc\/passwd/);
    await cmd('-i ../secret.mp4 {{out_1}}', /\.\./);
    await cmd('-i http://169.254.169.254/x.mp4 {{out_1}}', /http|protocol/i);
    await cmd('-i "{{in_1}} {{out_1}}', /quote/i);
    await cmd('-i {{in_1}} -filter_complex "movie=/etc/passwd" {{out_1}}', /movie/);
    await expect422({ ...good, ffmpeg_command: '-i {{in_1}} -c copy o2.mp4' }, ['body', 'ffmpeg_command']);
    await expect422(
      { ...good, output_files: { out_1: 'o.mp4', out_2: 'p.mp4' } },
      ['body', 'output_files'],
      'value_error',
      undefined,
      /out_2/,
    );
  });

  test('the backslash-escaped placeholder form is accepted', async () => {
    const res = await svc.client().post('/v1/run-ffmpeg-command', { ...good, ffmpeg_command: '-i \\{\\{in_1\\}\\} \\{\\{out_1\\}\\}' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test('metadata rules', async () => {
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i]));
    await expect422({ ...good, metadata: eleven }, ['body', 'metadata']);
    await expect422({ ...good, metadata: { k: 'x'.repeat(513) } }, ['body', 'metadata', 'k']);
    await expect422({ ...good, metadata: { ['k'.repeat(513)]: 1 } }, ['body', 'metadata', 'k'.repeat(513)]);
    await expect422({ ...good, metadata: { k: { nested: true } } }, ['body', 'metadata', 'k']);
  });

  test('chains: at most 10 commands, earlier outputs only with -i, single-only fields', async () => {
    const chain = { ffmpeg_commands: ['-i {{in_1}} {{out_1}}'], input_files: good.input_files, output_files: { out_1: 'o.mp4' } };
    const path = '/v1/run-chained-ffmpeg-commands';
    await expect422({ ...chain, ffmpeg_commands: Array(11).fill('-i {{in_1}} {{out_1}}') }, ['body', 'ffmpeg_commands'], 'too_long', path);
    await expect422({ ...chain, ffmpeg_commands: [] }, ['body', 'ffmpeg_commands'], 'too_short', path);
    await expect422(
      { ...chain, ffmpeg_commands: ['-i {{out_2}} {{out_1}}', '-i {{in_1}} {{out_2}}'], output_files: { out_1: 'a.mp4', out_2: 'b.mp4' } },
      ['body', 'ffmpeg_commands', 0],
      'value_error',
      path,
    );
    await expect422(
      { ...chain, input_compressed_folder: 'https://example.com/in.zip' },
      ['body', 'input_compressed_folder'],
      undefined,
      path,
    );
    const ok = await svc.client().post(path, {
      ...chain,
      ffmpeg_commands: ['-i {{in_1}} {{out_1}}', '-i {{out_1}} {{out_2}}'],
      output_files: { out_1: 'a.mp4', out_2: 'b.mp4' },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  test('malformed JSON, wrong content type, non-object bodies', async () => {
    const api = svc.client();
    const bad = await api.request('POST', '/v1/run-ffmpeg-command', '{"ffmpeg_command":');
    assert.equal(bad.status, 422);
    assert.equal(bad.body.detail[0].type, 'json_invalid');
    const text = await api.request('POST', '/v1/run-ffmpeg-command', 'hello', { 'content-type': 'text/plain' });
    assert.equal(text.status, 422);
    const arr = await api.request('POST', '/v1/run-ffmpeg-command', '[1,2]');
    assert.equal(arr.status, 422);
    assert.deepEqual(arr.body.detail[0].loc, ['body']);
  });

  test('unknown fields are ignored', async () => {
    const res = await svc.client().post('/v1/run-ffmpeg-command', { ...good, webhook: 'x', extra: { a: 1 } });
    assert.equal(res.status, 200);
  });

  test('query and path parameters', async () => {
    const api = svc.client();
    const r1 = await api.get('/v1/commands?limit=1001');
    assert.equal(r1.status, 422);
    assert.deepEqual(r1.body.detail[0].loc, ['query', 'limit']);
    const r2 = await api.get('/v1/commands?offset=-1');
    assert.deepEqual(r2.body.detail[0].loc, ['query', 'offset']);
    const r3 = await api.get('/v1/commands/not-a-uuid');
    assert.equal(r3.status, 422);
    assert.deepEqual(r3.body.detail[0].loc, ['path', 'command_id']);
    const r4 = await api.get('/v1/commands/00000000-0000-4000-8000-000000000000?presigned_ttl_seconds=604801');
    assert.deepEqual(r4.body.detail[0].loc, ['query', 'presigned_ttl_seconds']);
  });

  test('401 on every endpoint for a missing, malformed or revoked key', async () => {
    const revokedKey = await svc.newAccount('pro');
    await svc.service.accounts.revokeKey(revokedKey.split('_')[1], new Date());
    for (const key of [
      '',
      'nope',
      'ffo_000000000000_' + 'a'.repeat(32),
      revokedKey,
      svc.key.slice(0, -1) + (svc.key.endsWith('A') ? 'B' : 'A'),
    ]) {
      const api = svc.client(key);
      for (const [method, path] of [
        ['POST', '/v1/run-ffmpeg-command'],
        ['POST', '/v1/run-chained-ffmpeg-commands'],
        ['GET', '/v1/commands'],
        ['GET', '/v1/commands/00000000-0000-4000-8000-000000000000'],
      ]) {
        const res = await api.request(method, path, method === 'POST' ? good : undefined);
        assert.equal(res.status, 401, `${method} ${path} with key "${key}"`);
        assert.match(res.body.detail, /invalid/i);
      }
    }
  });

  test('oversized bodies are refused before they are read', async () => {
    const res = await svc.client().request('POST', '/v1/run-ffmpeg-command', JSON.stringify({ ...good, pad: 'x'.repeat(2 * 1024 * 1024) }));
    assert.equal(res.status, 413);
    assert.match(res.body.detail, /too large/);
  });

  test('health, readiness, OpenAPI document and offline docs page', async () => {
    assert.equal((await fetch(svc.url + '/healthz')).status, 200);
    assert.equal((await fetch(svc.url + '/readyz')).status, 200);
    const doc = await (await fetch(svc.url + '/openapi.json')).json();
    assert.equal(doc.openapi, '3.1.0');
    for (const p of ['/v1/run-ffmpeg-command', '/v1/run-chained-ffmpeg-commands', '/v1/commands', '/v1/commands/{command_id}']) {
      assert.ok(doc.paths[p], `${p} missing from the OpenAPI document`);
    }
    assert.match(JSON.stringify(doc), /FFMPEG_TIMEOUT/);
    const page = await (await fetch(svc.url + '/docs')).text();
    assert.doesNotMatch(page, /https?:\/\//, 'the docs page must not load anything from the internet');
    for (const asset of page.matchAll(/(?:src|href)="([^"]+)"/g)) {
      assert.equal((await fetch(svc.url + asset[1])).status, 200, asset[1]);
    }
  });
});

describe('hostile details found by fuzzing', () => {
  let svc: ServiceFixture;
  before(async () => {
    svc = await startService();
  });
  after(async () => {
    await svc?.close();
  });
  const good = {
    ffmpeg_command: '-i {{in_1}} {{out_1}}',
    input_files: { in_1: 'https://example.com/a.mp4' },
    output_files: { out_1: 'o.mp4' },
  };

  test('strings the database cannot store are 422s, not 500s', async () => {
    const api = svc.client();
    for (const [body, loc] of [
      [{ ...good, metadata: { k: 'a\u0000b' } }, ['body', 'metadata', 'k']],
      [{ ...good, metadata: { k: 'a\ud800' } }, ['body', 'metadata', 'k']],
      [{ ...good, input_files: { in_1: 'https://example.com/a\u0000.mp4' } }, ['body', 'input_files', 'in_1']],
    ] as const) {
      const res = await api.post('/v1/run-ffmpeg-command', body);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(res.body.detail[0].loc, loc);
      assert.equal(res.body.detail[0].type, 'string_unicode');
    }
    const store = await api.post('/v1/files/store-file', { file_url: 'https://example.com/\u0000.mp4' });
    assert.equal(store.status, 422);
  });

  test('reserved keys, infinite numbers, huge offsets, wrong content types and bad UTF-8 are 422s', async () => {
    const api = svc.client();
    const proto = await api.request(
      'POST',
      '/v1/run-ffmpeg-command',
      '{"ffmpeg_command":"-i {{in_1}} {{out_1}}","input_files":{"in_1":"https://example.com/a.mp4"},' +
        '"output_files":{"out_1":"o.mp4","__proto__":"x.mp4"}}',
    );
    assert.equal(proto.status, 422);
    assert.deepEqual(proto.body.detail[0].loc, ['body', 'output_files', '__proto__']);
    const inf = await api.request('POST', '/v1/run-ffmpeg-command', JSON.stringify(good).replace('}', ',"metadata":{"n":1e309}}'));
    assert.equal(inf.status, 422, JSON.stringify(inf.body));
    for (const path of ['/v1/commands?offset=99999999999999999999', '/v1/files?offset=9223372036854775807']) {
      const res = await api.get(path);
      assert.equal(res.status, 422, path);
      assert.deepEqual(res.body.detail[0].loc, ['query', 'offset']);
    }
    const textPlain = await api.request('POST', '/v1/run-ffmpeg-command', JSON.stringify(good), { 'content-type': 'text/plain' });
    assert.equal(textPlain.status, 422);
    assert.equal(textPlain.body.detail[0].type, 'model_attributes_type');
    const latin = await fetch(svc.url + '/v1/run-ffmpeg-command', {
      method: 'POST',
      headers: { 'x-api-key': svc.key, 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from('{"ffmpeg_command":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    });
    assert.equal(latin.status, 422);
    assert.equal((await latin.json()).detail[0].type, 'json_invalid');
  });

  test('names that are JavaScript property names or 255 characters long work', async () => {
    const api = svc.client();
    for (const filename of ['a.constructor', 'a.__proto__', 'x'.repeat(251) + '.mp4']) {
      const res = await api.post('/v1/files/init-upload', { filename, size_bytes: 1 });
      assert.equal(res.status, 200, `${filename}: ${JSON.stringify(res.body)}`);
    }
    assert.equal((await fetch(svc.url + '/docs/assets/constructor')).status, 404);
    assert.equal((await fetch(svc.url + '/docs/assets/__proto__')).status, 404);
  });
});

test('a known path with another method is 405 with Allow; an unknown path is 404', async () => {
  const svc = await startService();
  try {
    const put = await svc.client().request('PUT', '/v1/commands');
    assert.equal(put.status, 405);
    assert.deepEqual(put.body, { detail: 'Method Not Allowed' });
    assert.match(put.headers.get('allow')!, /GET/);
    const del = await svc.client().request('DELETE', '/v1/run-ffmpeg-command');
    assert.equal(del.status, 405);
    assert.match(del.headers.get('allow')!, /POST/);
    const none = await svc.client().request('GET', '/v1/nothing-here');
    assert.equal(none.status, 404);
    assert.deepEqual(none.body, { detail: 'Not Found' });
  } finally {
    await svc.close();
  }
});
