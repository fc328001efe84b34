// Attack: read another API key's answer by sending its Idempotency-Key (the answer holds a command id or
// upload URLs), or break the service with keys it cannot store: huge, binary, control characters.
// Keys are scoped by the API key that sent them, so the attacker's request is a request of its own;
// every malformed key is a 422 naming the header, never a 500, and nothing is created.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startService, type ServiceFixture } from '../harness.ts';

const CHEAP = { ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}', output_files: { out_1: 'a.png' } };

/** Sends the header's bytes as they are, over a plain socket (Node's and fetch's clients refuse some). */
function rawPost(url: string, apiKey: string, keyBytes: Buffer, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const socket = connect(Number(u.port), u.hostname);
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (answer += c));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      resolve({ status, text: answer.slice(answer.indexOf('\r\n\r\n') + 4) });
    });
    const head =
      `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nX-API-Key: ${apiKey}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nIdempotency-Key: `;
    // Not end(): a client that half-closes may lose its answer; the server closes (Connection: close).
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), keyBytes, Buffer.from(`\r\n\r\n${body}`, 'utf8')]));
  });
}

describe("security: idempotency keys cannot read another key's answers or break the service", () => {
  let svc: ServiceFixture;

  before(async () => {
    svc = await startService();
    // Nothing submitted here needs to run.
    await svc.service.reconciler.stop();
  });
  after(async () => {
    await svc?.close();
  });

  test("another account's (or another API key's) request with the victim's key gets its own answer, never the victim's", async () => {
    const victim = svc.client(await svc.newAccount('pro'));
    const attacker = svc.client(await svc.newAccount('pro'));
    const prober = svc.client(await svc.newAccount('pro'));
    const key = 'order-42';
    const headers = { 'Idempotency-Key': key };
    const upload = { filename: 'secret.bin', size_bytes: 10 };
    const v1 = await victim.request('POST', '/v1/run-ffmpeg-command', CHEAP, headers);
    const v2 = await victim.request('POST', '/v1/files/init-upload', upload, { 'Idempotency-Key': `${key}-upload` });
    assert.equal(v1.status, 200);
    assert.equal(v2.status, 200);

    // The very same request bytes, from the attacker: a new command of the attacker's, not a replay.
    const a1 = await attacker.request('POST', '/v1/run-ffmpeg-command', CHEAP, headers);
    assert.equal(a1.status, 200);
    assert.notEqual(a1.body.command_id, v1.body.command_id);
    assert.equal(a1.headers.get('idempotent-replayed'), null);
    const a2 = await attacker.request('POST', '/v1/files/init-upload', upload, { 'Idempotency-Key': `${key}-upload` });
    assert.equal(a2.status, 200);
    assert.notEqual(a2.body.file_id, v2.body.file_id);
    assert.notDeepEqual(a2.body.upload_urls, v2.body.upload_urls);
    // Another body with the victim's key: not a 422 either (that would tell the key is in use).
    const a3 = await prober.request('POST', '/v1/run-ffmpeg-command', { ...CHEAP, metadata: { probe: 1 } }, headers);
    assert.equal(a3.status, 200);
    assert.equal(a3.headers.get('idempotent-replayed'), null);
    assert.equal((await attacker.get(`/v1/commands/${v1.body.command_id}`)).status, 404);

    // The victim's own second key: the same.
    const victimAccount = (await svc.service.accounts.authenticate(victim.key))!.account;
    const second = svc.client((await svc.service.accounts.createKey(victimAccount.id, 'main')).key);
    const s1 = await second.request('POST', '/v1/run-ffmpeg-command', CHEAP, headers);
    assert.equal(s1.status, 200);
    assert.notEqual(s1.body.command_id, v1.body.command_id);
    assert.equal(s1.headers.get('idempotent-replayed'), null);

    // And the victim still gets its own answer.
    const again = await victim.request('POST', '/v1/run-ffmpeg-command', CHEAP, headers);
    assert.deepEqual([again.body, again.headers.get('idempotent-replayed')], [v1.body, 'true']);
  });

  test('huge, binary and control-character keys are 422s naming the header; nothing is created, the service stays up', async () => {
    const client = svc.client(await svc.newAccount('pro'));
    const body = JSON.stringify(CHEAP);
    const bad: [string, Buffer][] = [
      ['10 KB', Buffer.from('k'.repeat(10 * 1024))],
      ['256 characters', Buffer.from('k'.repeat(256))],
      ['bytes 0x80-0xff', Buffer.from(Array.from({ length: 128 }, (_, i) => 0x80 + i))],
      ['UTF-8 text', Buffer.from('clé-€-😀', 'utf8')],
      ['a tab', Buffer.from('a\tb')],
      ['spaces only', Buffer.from('   ')],
    ];
    for (const [what, bytes] of bad) {
      const res = await rawPost(`${svc.url}/v1/run-ffmpeg-command`, client.key, bytes, body);
      assert.equal(res.status, 422, `${what}: ${res.text}`);
      assert.deepEqual(JSON.parse(res.text).detail[0].loc, ['header', 'Idempotency-Key'], what);
    }
    // Bytes HTTP itself forbids in a header (NUL, CR, other controls, DEL): Node's parser refuses the
    // request with a 400 before the service sees it.
    for (const byte of [0x00, 0x01, 0x0d, 0x1b, 0x7f]) {
      const res = await rawPost(`${svc.url}/v1/run-ffmpeg-command`, client.key, Buffer.from([0x61, byte, 0x62]), body);
      assert.equal(res.status, 400, `byte ${byte}: ${res.status} ${res.text}`);
    }
    assert.deepEqual((await client.get('/v1/commands')).body, []);
    assert.equal((await client.request('POST', '/v1/run-ffmpeg-command', CHEAP, { 'Idempotency-Key': 'fine' })).status, 200);
  });
});
