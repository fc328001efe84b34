import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandEventHub } from '../../core/commands/command-event-hub.ts';
import type { CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import { EventStreams, type StreamSlot } from './event-streams.ts';
import { stateView } from './command-event-view.ts';

const command = (status: string, stage: string | null = null) =>
  ({
    row: { id: 'c1', accountId: 'a1', status, processingStage: stage, queueReason: null, progress: null },
    files: [],
  }) as unknown as CommandWithOutputs;

function setup(o: { read?: () => Promise<CommandWithOutputs | null> } & Partial<ConstructorParameters<typeof EventStreams>[0]> = {}) {
  let current = command('QUEUED');
  const hub = new CommandEventHub({ read: o.read ?? (async () => current) });
  const streams = new EventStreams({ hub, record: async (v) => ({ record_of: v.row.status }), ...o });
  return { hub, streams, set: (v: CommandWithOutputs) => (current = v), current: () => current };
}

async function openOn(streams: EventStreams, read: () => CommandWithOutputs | null, lastEventId: string | null = null) {
  const slot = streams.take('k1') as StreamSlot;
  assert.ok(!('detail' in slot));
  const res = await streams.open(slot, 'a1', 'c1', lastEventId, async () => read());
  return res && { res, reader: res.body!.pipeThrough(new TextDecoderStream()).getReader(), seen: { text: '' } };
}

/** Everything the stream sent so far, once it holds `text` (or the stream ended). */
async function readUntil(o: { reader: ReadableStreamDefaultReader<string>; seen: { text: string } }, text: string): Promise<string> {
  while (!o.seen.text.includes(text)) {
    const { value, done } = await o.reader.read();
    if (done) break;
    o.seen.text += value;
  }
  return o.seen.text;
}

test('limits per key and in all: refused with a detail; a released slot is free again', () => {
  const { streams } = setup({ maxPerKey: 2, maxTotal: 3 });
  const a = [streams.take('k1'), streams.take('k1')];
  const third = streams.take('k1');
  assert.ok('detail' in third && /at most 2 open at once per API key/.test(third.detail) && third.retryAfterSeconds > 0);
  assert.ok(!('detail' in streams.take('k2')));
  const total = streams.take('k3');
  assert.ok('detail' in total && /on this server/.test(total.detail));
  streams.release(a[0] as StreamSlot);
  streams.release(a[0] as StreamSlot); // twice: once counted
  assert.ok(!('detail' in streams.take('k1')));
  assert.ok('detail' in streams.take('k1'));
});

test('the first state, then only changes, then the end record; the stream then closes and frees its slot', async () => {
  const { hub, streams, set, current } = setup({ maxPerKey: 1 });
  const opened = (await openOn(streams, current))!;
  assert.equal(opened.res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const queued = stateView(command('QUEUED'));
  assert.match(await readUntil(opened, '\n\n' + 'id: '), /^retry: \d+\n\n/);
  let text = await readUntil(opened, queued.json);
  assert.ok(text.includes(`id: ${queued.id}\nevent: state\ndata: ${queued.json}\n\n`), text);
  hub.changed('c1'); // same state: nothing sent
  set(command('PROCESSING', 'FFMPEG_PROCESSING'));
  hub.changed('c1');
  text = await readUntil(opened, 'FFMPEG_PROCESSING');
  assert.equal(text.split(queued.id).length, 2, 'the unchanged state is not sent again');
  set(command('SUCCESS'));
  hub.changed('c1');
  text = await readUntil(opened, '\0never');
  assert.ok(text.includes(`event: end\ndata: {"record_of":"SUCCESS"}\n\n`), text);
  assert.equal(streams.size, 0);
  assert.equal(hub.watched, 0);
  assert.ok(!('detail' in streams.take('k1')), 'the slot is free');
});

test('Last-Event-ID of the current state: nothing until it changes', async () => {
  const { hub, streams, set, current } = setup();
  const opened = (await openOn(streams, current, stateView(command('QUEUED')).id))!;
  set(command('FAILED'));
  hub.changed('c1');
  const text = await readUntil(opened, '\0never');
  assert.ok(!text.includes('event: state'), text);
  assert.ok(text.includes('event: end'), text);
});

test('an unknown command frees its slot and answers null', async () => {
  const { streams } = setup({ maxPerKey: 1 });
  assert.equal(await openOn(streams, () => null), null);
  assert.equal(streams.size, 0);
  assert.ok(!('detail' in streams.take('k1')));
});

test('a heartbeat comment while idle; the stream ends after its lifetime', async () => {
  const { streams, current } = setup({ heartbeatMs: 20, lifetimeMs: 200 });
  const opened = (await openOn(streams, current))!;
  const alive = setInterval(() => {}, 50); // the streams' timer does not hold the process (a server does)
  const text = await readUntil(opened, '\0never');
  clearInterval(alive);
  assert.ok(text.includes(': keep-alive\n\n'), text);
  assert.equal(streams.size, 0);
});

test('closeAll (shutdown), a client that goes away, and a revoked key end streams and free slots', async () => {
  const { streams, current } = setup();
  const a = (await openOn(streams, current))!;
  const b = (await openOn(streams, current))!;
  assert.equal(streams.size, 2);
  await b.reader.cancel();
  assert.equal(streams.size, 1);
  await streams.keysChanged(async () => new Set(['k1']));
  assert.equal(streams.size, 1, 'a valid key keeps its streams');
  await streams.keysChanged(async () => new Set());
  assert.equal(streams.size, 0);
  assert.equal((await a.reader.read()).done, false); // what was sent before the close is still read
  const c = (await openOn(streams, current))!;
  streams.closeAll();
  assert.equal(streams.size, 0);
  await readUntil(c, '\0never');
});

test('a client that does not read is let go once its unsent events pass the bound', async () => {
  let n = 0;
  const { hub, streams } = setup({ maxBufferedBytes: 64 });
  const read = () => command('PROCESSING', `STAGE_${n++}`);
  const opened = (await openOn(streams, read))!;
  for (let i = 0; i < 10 && streams.size > 0; i += 1) {
    hub.changed('c1');
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(streams.size, 0);
  void opened.reader.cancel();
});
