// The live event stream in cluster mode: the operator and the runner pods change the command (their
// writes reach the API through PostgreSQL's notifications), and a stream opened on the API sees it
// through to SUCCESS, ending with the record the poll answers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openEventStream } from '../event-stream-client.ts';
import { startClusterService, type ClusterService } from './service-fixture.ts';

describe('event streams, cluster mode', () => {
  let svc: ClusterService;

  before(async () => {
    svc = await startClusterService();
  });
  after(async () => {
    await svc?.close();
  });

  test('a stream follows a command from its submit through PROCESSING to SUCCESS, then closes', async () => {
    const api = svc.client();
    const id = await api.submit({
      ffmpeg_command: '-re -f lavfi -i testsrc=size=64x48:rate=10 -t 2 -c:v libx264 -preset ultrafast {{out_1}}',
      output_files: { out_1: 'live.mp4' },
      vcpu_count: 1,
      max_command_run_seconds: 120,
    });
    const stream = await openEventStream(svc.apiUrl, svc.key, id);
    assert.equal(stream.status, 200, JSON.stringify(stream.body));
    const events = [];
    for (let e = await stream.next(180_000); e !== null; e = await stream.next(180_000)) events.push(e);
    await stream.ended;
    const states = events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data));
    assert.equal(states[0].status, 'QUEUED', JSON.stringify(states));
    assert.ok(
      states.some((s) => s.status === 'PROCESSING'),
      JSON.stringify(states),
    );
    const end = events.at(-1)!;
    assert.equal(end.event, 'end', JSON.stringify(events));
    const record = JSON.parse(end.data);
    assert.equal(record.status, 'SUCCESS', end.data);
    assert.deepEqual(record, (await api.get(`/v1/commands/${id}`)).body);
  });
});
