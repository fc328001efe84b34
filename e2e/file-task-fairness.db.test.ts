// Attack: one account queues many store-file downloads from a server that sends a few bytes and then
// holds the connection open; another account's store-file must still be stored at once. The file
// tasks hold at most 2 of their 4 slots per account, and a free slot goes to the account with the
// fewest tasks running (core/engine/file-tasks.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeClip, startMediaServer, startService, waitForFile, type MediaServer, type ServiceFixture } from './harness.ts';

describe('file tasks: fair shares across accounts', () => {
  let media: MediaServer;
  let trickle: http.Server;
  let trickleUrl: string;
  const trickled: string[] = [];
  let svc: ServiceFixture;

  before(async () => {
    media = await startMediaServer((dir) => makeClip(dir, 'clip.mp4', 1));
    // Announces 100 MB, sends 1 KB, then never another byte.
    trickle = http.createServer((req, res) => {
      trickled.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(100 * 1024 * 1024) });
      res.write(Buffer.alloc(1024));
    });
    await new Promise<void>((r) => trickle.listen(0, '127.0.0.1', r));
    const { port } = trickle.address() as AddressInfo;
    trickleUrl = `http://127.0.0.1:${port}`;
    svc = await startService({ allow: [media.allowEntry, `127.0.0.1:${port}`] });
  });
  after(async () => {
    await svc?.close();
    trickle?.closeAllConnections();
    await new Promise((r) => trickle?.close(r));
    await media?.close();
  });

  test('attack: 12 downloads that never finish hold 2 slots; another account stores its file meanwhile', async () => {
    const flooder = svc.client(await svc.newAccount('pro'));
    const flood: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await flooder.post('/v1/files/store-file', { file_url: `${trickleUrl}/slow-${i}.mp4` });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      flood.push(res.body.file_id);
    }
    for (const deadline = Date.now() + 30_000; trickled.length < 2; await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) assert.fail(`the flood's downloads did not start: ${JSON.stringify(trickled)}`);
    }
    const victim = svc.client(await svc.newAccount('pro'));
    const res = await victim.post('/v1/files/store-file', { file_url: `${media.url}/clip.mp4` });
    const file = await waitForFile(victim, res.body.file_id);
    assert.equal(file.status, 'STORED', JSON.stringify(file));
    // The flood holds its share, no more: the other 10 wait their turn.
    assert.equal(trickled.length, 2, JSON.stringify(trickled));
    const statuses = await Promise.all(flood.map(async (id) => (await flooder.get(`/v1/files/${id}`)).body.status));
    assert.deepEqual(statuses.filter((s) => s === 'QUEUED').length, 10, JSON.stringify(statuses));
  });
});
