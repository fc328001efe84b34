import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeTimeline } from './step-timeline.ts';

const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 20, 0, s));

test('a step stopped in ffmpeg: every part of its time, waiting included', () => {
  assert.equal(
    describeTimeline({
      jobStart: at(0),
      scheduledAt: at(2),
      containerStartedAt: at(3),
      stages: [
        { stage: 'DOWNLOADING', at: at(4) },
        { stage: 'FFMPEG_PROCESSING', at: at(9) },
      ],
      end: at(50),
    }),
    '2 s waiting for a node, 2 s starting its container, 5 s downloading inputs, 41 s in ffmpeg',
  );
});

test('a pod that never found a node says so, and nothing else', () => {
  assert.equal(
    describeTimeline({ jobStart: at(0), scheduledAt: null, containerStartedAt: null, stages: [], end: at(50) }),
    '50 s waiting for a node (its pod was never scheduled)',
  );
});

test('a runner that reported nothing: the container time is up to the end', () => {
  assert.equal(
    describeTimeline({ jobStart: at(0), scheduledAt: at(1), containerStartedAt: null, stages: [], end: at(30) }),
    '1 s waiting for a node, 29 s starting its container',
  );
});
