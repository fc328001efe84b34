// Attacks on the live event streams (GET /v1/commands/{id}/events): a flood of connections past the
// per-key and per-process limits gets 429s while polls are still answered; connections dropped at
// once give their slots back; another account's events are 404, with or without a Last-Event-ID.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type ApiClient, type ServiceFixture } from '../harness.ts';
import { openEventStream, type OpenedStream } from '../event-stream-client.ts';

const PER_KEY = 5;
const PER_PROCESS = 12;

/** Runs a long while, so that commands behind it stay QUEUED (one vCPU). */
const long = {
  ffmpeg_command: '-re -f lavfi -i testsrc=size=64x48:rate=10 -t 60 -c:v libx264 -preset ultrafast {{out_1}}',
  output_files: { out_1: 'out.mp4' },
  vcpu_count: 1,
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
  }
}

describe('attacks on event streams', () => {
  let svc: ServiceFixture;
  let api: ApiClient;
  let blocker: string;
  const open: OpenedStream[] = [];

  before(async () => {
    svc = await startService({
      env: { FFOP_LOCAL_MAX_VCPUS: '1', FFOP_MAX_EVENT_STREAMS_PER_KEY: String(PER_KEY), FFOP_MAX_EVENT_STREAMS: String(PER_PROCESS) },
    });
    api = svc.client();
    blocker = await api.submit(long);
  });
  after(async () => {
    for (const s of open) s.close();
    await api?.post(`/v1/commands/${blocker}/cancel`, undefined);
    await svc?.close();
  });

  const flood = async (key: string, id: string, count: number) => {
    const answers = await Promise.all(Array.from({ length: count }, () => openEventStream(svc.url, key, id)));
    open.push(...answers);
    return answers;
  };

  test('a flood past the per-key and per-process limits gets 429s with Retry-After; polls are still answered', async () => {
    const keys = [await svc.newAccount('pro'), await svc.newAccount('pro'), await svc.newAccount('pro')];
    const ids = await Promise.all(keys.map((key) => svc.client(key).submit(long)));
    const first = await flood(keys[0], ids[0], 60);
    assert.equal(first.filter((s) => s.status === 200).length, PER_KEY);
    for (const s of first.filter((x) => x.status !== 200)) {
      assert.equal(s.status, 429);
      assert.match(s.body.detail, /per API key/);
      assert.ok(Number(s.headers.get('retry-after')) >= 1);
    }
    const second = await flood(keys[1], ids[1], 30);
    assert.equal(second.filter((s) => s.status === 200).length, PER_KEY);
    const third = await flood(keys[2], ids[2], 30);
    assert.equal(third.filter((s) => s.status === 200).length, PER_PROCESS - 2 * PER_KEY);
    assert.ok(third.some((s) => s.status === 429 && /on this server/.test(s.body.detail)));
    // The service still answers everyone's polls, the flooding keys' too.
    for (const [i, key] of keys.entries()) {
      const poll = await svc.client(key).get(`/v1/commands/${ids[i]}`);
      assert.equal(poll.status, 200);
      assert.equal(poll.body.status, 'QUEUED');
    }
    assert.equal((await api.get(`/v1/commands/${blocker}`)).status, 200);
    // Every stream that got in is live: its first event is the command's state.
    for (const s of [...first, ...second, ...third].filter((x) => x.status === 200)) assert.equal((await s.next())!.event, 'state');
    for (const s of open.splice(0)) s.close();
  });

  test('connections dropped at once give their slots back', async () => {
    const key = await svc.newAccount('pro');
    const id = await svc.client(key).submit(long);
    // HEAD answers the headers and holds no stream.
    for (let i = 0; i < 2 * PER_KEY; i += 1) {
      const head = await fetch(`${svc.url}/v1/commands/${id}/events`, { method: 'HEAD', headers: { 'x-api-key': key } });
      assert.equal(head.status, 200);
      assert.match(head.headers.get('content-type') ?? '', /^text\/event-stream/);
    }
    for (let round = 0; round < 5; round += 1) {
      const answers = await flood(key, id, PER_KEY);
      for (const s of answers) s.close();
    }
    const again = await until('every slot of the key is free', async () => {
      const answers = await flood(key, id, PER_KEY);
      if (answers.every((s) => s.status === 200)) return answers;
      for (const s of answers) s.close();
      return undefined;
    });
    assert.equal(again.length, PER_KEY);
    for (const s of open.splice(0)) s.close();
  });

  test("another account's events are 404, as an unknown command's, whatever Last-Event-ID it sends", async () => {
    const victimKey = await svc.newAccount('pro');
    const id = await svc.client(victimKey).submit(long);
    const victim = await openEventStream(svc.url, victimKey, id);
    open.push(victim);
    const state = (await victim.next())!;
    const attacker = await svc.newAccount('pro');
    for (const lastEventId of [undefined, state.id!, 'x'.repeat(5000), '../../etc']) {
      const s = await openEventStream(svc.url, attacker, id, { lastEventId });
      assert.equal(s.status, 404, JSON.stringify(s.body));
      assert.deepEqual(s.body, { detail: 'Command not found' });
    }
    // The attacker's refused attempts cost the victim nothing: its stream still follows its command.
    assert.equal((await svc.client(victimKey).post(`/v1/commands/${id}/cancel`, undefined)).status, 202);
    let last = await victim.next();
    while (last && last.event !== 'end') last = await victim.next();
    assert.equal(JSON.parse(last!.data).error_status, 'CANCELLED');
  });
});
