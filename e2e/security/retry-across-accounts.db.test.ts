// Attack: retrying another account's command. The retry route answers 404 exactly as for an unknown
// id (no way to tell that the command exists), creates nothing, and the victim's record is untouched.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startService, type ServiceFixture } from '../harness.ts';

let svc: ServiceFixture;
before(async () => {
  svc = await startService();
});
after(async () => {
  await svc?.close();
});

test("another account's FAILED command cannot be retried, nor seen to exist", async () => {
  const victim = svc.client(await svc.newAccount('pro'));
  const attacker = svc.client(await svc.newAccount('pro'));
  // FAILED at submit: ffmpeg would stop on the unknown filter, so nothing runs.
  const id = await victim.submit({
    ffmpeg_command: '-f lavfi -i testsrc=duration=1 -vf no_such_filter {{out_1}}',
    output_files: { out_1: 'out.mp4' },
    vcpu_count: 1,
  });
  assert.equal((await victim.waitForEnd(id)).record.status, 'FAILED');

  const theirs = await attacker.post(`/v1/commands/${id}/retry`, undefined);
  const unknown = await attacker.post('/v1/commands/00000000-0000-4000-8000-000000000000/retry', undefined);
  assert.equal(theirs.status, 404);
  assert.deepEqual(theirs.body, unknown.body);
  assert.deepEqual((await attacker.get('/v1/commands')).body, []);
  assert.equal((await victim.get(`/v1/commands/${id}`)).body.retried_by, null);
});
