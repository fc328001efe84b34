import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PhaseClock } from './phase-clock.ts';

function clockAt(times: number[]) {
  let i = 0;
  return () => times[i++];
}

test('download and upload are measured from their begin to the next phase', () => {
  // begin download @0, end at ffmpeg @1500, begin upload @4000, seconds() @4250
  const clock = new PhaseClock(clockAt([0, 1500, 4000, 4250]));
  clock.begin('download');
  clock.end();
  clock.begin('upload');
  assert.deepEqual(clock.seconds(), { downloadSeconds: 1.5, uploadSeconds: 0.25 });
});

test('a phase not reached is left out; one open at a failure counts up to it', () => {
  const clock = new PhaseClock(clockAt([100, 2100]));
  clock.begin('download');
  assert.deepEqual(clock.seconds(), { downloadSeconds: 2 });
});

test('nothing reached: nothing reported', () => {
  assert.deepEqual(new PhaseClock(() => 0).seconds(), {});
});
