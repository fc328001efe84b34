// The live event stream of a command (GET /v1/commands/{id}/events) end to end in embedded mode:
// real HTTP, real (confined) ffmpeg, on one vCPU so that a command waits QUEUED behind another.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startService, type ApiClient, type ServiceFixture } from './harness.ts';
import { openEventStream, type OpenedStream } from './event-stream-client.ts';

/** A command that writes `seconds` of video in real time (-re): it runs that long and reports progress. */
const realTime = (seconds: number) => ({
  ffmpeg_command: `-re -f lavfi -i testsrc=size=64x48:rate=10 -t ${seconds} -c:v libx264 -preset ultrafast {{out_1}}`,
  output_files: { out_1: 'out.mp4' },
  vcpu_count: 1,
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, limitMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + limitMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
  }
}

/** Every event until the stream ends. */
async function drain(stream: OpenedStream, limitMs = 120_000) {
  const all = [];
  for (let e = await stream.next(limitMs); e !== null; e = await stream.next(limitMs)) all.push(e);
  await stream.ended;
  return all;
}

describe('command event streams, embedded mode', () => {
  let svc: ServiceFixture;
  let api: ApiClient;
  const streams: OpenedStream[] = [];
  const open = async (id: string, o: { key?: string; lastEventId?: string } = {}) => {
    const s = await openEventStream(svc.url, o.key ?? svc.key, id, o);
    streams.push(s);
    return s;
  };

  before(async () => {
    svc = await startService({ env: { FFOP_LOCAL_MAX_VCPUS: '1', FFOP_MAX_EVENT_STREAMS_PER_KEY: '3' } });
    api = svc.client();
  });
  after(async () => {
    for (const s of streams) s.close();
    await svc?.close();
  });

  const cancel = async (id: string) => assert.equal((await api.post(`/v1/commands/${id}/cancel`, undefined)).status, 202);

  test('a running command: QUEUED, then PROCESSING with its stages and progress, then the final record, then the stream closes', async () => {
    const blocker = await api.submit(realTime(3));
    const id = await api.submit(realTime(3));
    const stream = await open(id);
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = await drain(stream);
    const states = events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data));
    const end = events.at(-1)!;
    assert.equal(end.event, 'end', JSON.stringify(events));
    assert.equal(events.filter((e) => e.event === 'end').length, 1);
    assert.equal(states[0].status, 'QUEUED', JSON.stringify(states));
    assert.ok(
      states.some((s) => s.status === 'PROCESSING' && s.processing_stage === 'FFMPEG_PROCESSING'),
      JSON.stringify(states),
    );
    assert.ok(
      states.some((s) => s.progress?.percent > 0),
      JSON.stringify(states),
    );
    for (const s of states) assert.equal(s.command_id, id);
    // Every event is a change: no id twice in a row, and ids name states (equal data, equal id).
    for (let i = 1; i < events.length; i += 1) assert.notEqual(events[i].id, events[i - 1].id);
    const record = JSON.parse(end.data);
    assert.equal(record.status, 'SUCCESS');
    assert.deepEqual(record, (await api.get(`/v1/commands/${id}`)).body);
    await api.waitForEnd(blocker);
  });

  test('an ended command answers its final record at once and closes; resuming with its id sends nothing', async () => {
    const id = await api.submit(realTime(1));
    const ended = await api.waitForEnd(id);
    const stream = await open(id);
    const events = await drain(stream);
    assert.equal(events.length, 1);
    assert.equal(events[0].event, 'end');
    assert.deepEqual(JSON.parse(events[0].data), ended.record);

    const again = await open(id, { lastEventId: events[0].id! });
    assert.equal(again.status, 200);
    assert.deepEqual(await drain(again), []);
  });

  test('Last-Event-ID resumes: the state the client has is not sent again, the next change is', async () => {
    const blocker = await api.submit(realTime(30));
    await until('the blocker runs', async () =>
      (await api.get(`/v1/commands/${blocker}`)).body.status === 'PROCESSING' ? true : undefined,
    );
    const id = await api.submit(realTime(1));
    const first = await open(id);
    const queued = (await first.next())!;
    assert.equal(queued.event, 'state');
    assert.equal(JSON.parse(queued.data).status, 'QUEUED');
    first.close();

    const resumed = await open(id, { lastEventId: queued.id! });
    assert.equal(resumed.status, 200);
    // A client with an id that is not (or no longer) the current state's gets the current state.
    const other = await open(id, { lastEventId: 'not-a-state-we-had' });
    assert.equal(JSON.parse((await other.next())!.data).status, 'QUEUED');
    other.close();
    await cancel(id);
    const events = await drain(resumed);
    assert.deepEqual(
      events.map((e) => e.event),
      ['end'],
      JSON.stringify(events),
    );
    assert.equal(JSON.parse(events[0].data).error_status, 'CANCELLED');
    await cancel(blocker);
  });

  test("another account's command, and an unknown one, are 404; a malformed id is 422", async () => {
    const id = await api.submit(realTime(1));
    const stranger = await svc.newAccount('pro');
    const theirs = await open(id, { key: stranger });
    assert.equal(theirs.status, 404);
    assert.deepEqual(theirs.body, { detail: 'Command not found' });
    assert.equal((await open(randomUUID())).status, 404);
    assert.equal((await open('not-a-uuid')).status, 422);
    assert.equal((await openEventStream(svc.url, 'ffo_wrong_key', id)).status, 401);
    await api.waitForEnd(id);
  });

  test('at most FFOP_MAX_EVENT_STREAMS_PER_KEY streams per key: 429 with Retry-After; a closed stream frees its slot', async () => {
    const blocker = await api.submit(realTime(30));
    const id = await api.submit(realTime(1));
    const key = await svc.newAccount('pro');
    const own = await svc.client(key).submit(realTime(1));
    const held = [await open(own, { key }), await open(own, { key }), await open(own, { key })];
    for (const s of held) assert.equal(s.status, 200);
    const over = await open(own, { key });
    assert.equal(over.status, 429);
    assert.match(over.body.detail, /at most 3/);
    assert.ok(Number(over.headers.get('retry-after')) > 0);
    // Another key has its own streams.
    const mine = await open(id);
    assert.equal(mine.status, 200);
    mine.close();

    held[0].close();
    const freed = await until('a slot is free again', async () => {
      const s = await open(own, { key });
      return s.status === 200 ? s : undefined;
    });
    freed.close();
    await cancel(blocker);
  });

  test("a revoked key's streams close", async () => {
    const key = await svc.newAccount('pro');
    const blocker = await api.submit(realTime(30));
    const id = await svc.client(key).submit(realTime(1));
    const stream = await open(id, { key });
    assert.equal((await stream.next())!.event, 'state');
    const keyId = key.split('_')[1];
    assert.ok(await svc.service.accounts.revokeKey(keyId, new Date()));
    await stream.ended; // the server ends it (the test's own timeout is the deadline)
    assert.equal(stream.events.length, 1);
    await cancel(blocker);
  });
});

describe('event streams at shutdown', () => {
  test("the service's close ends its open streams (it would otherwise wait for them)", async () => {
    const svc = await startService({ env: { FFOP_LOCAL_MAX_VCPUS: '1' } });
    try {
      const api = svc.client();
      await api.submit(realTime(60));
      const id = await api.submit(realTime(1));
      const stream = await openEventStream(svc.url, svc.key, id);
      assert.equal((await stream.next())!.event, 'state');
      await svc.stop(); // the test's own timeout is the deadline
      await stream.ended;
      assert.equal(stream.events.length, 1);
    } finally {
      await svc.close();
    }
  });
});
