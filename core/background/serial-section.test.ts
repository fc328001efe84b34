import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SerialSection } from './serial-section.ts';

test('pieces run one at a time in the order they came; a failure is its caller’s and the next piece runs', async () => {
  const section = new SerialSection();
  const log: string[] = [];
  let release: () => void = () => {};
  const first = section.run(async () => {
    log.push('first begins');
    await new Promise<void>((r) => (release = r));
    log.push('first ends');
  });
  const failing = section.run(async () => {
    log.push('failing');
    throw new Error('boom');
  });
  const last = section.run(async () => {
    log.push('last');
    return 7;
  });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(log, ['first begins']);
  release();
  await first;
  await assert.rejects(failing, /boom/);
  assert.equal(await last, 7);
  await section.idle();
  assert.deepEqual(log, ['first begins', 'first ends', 'failing', 'last']);
});
