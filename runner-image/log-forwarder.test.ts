import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogForwarder, scrub } from './log-forwarder.ts';
import type { RunnerEvent } from '../core/jobs/step-spec.ts';
import { MAX_LOG_EVENT_CHARS } from '../core/jobs/runner-event-schema.ts';

const sent = () => {
  const events: RunnerEvent[] = [];
  return { events, emit: (e: RunnerEvent) => events.push(e), text: () => events.map((e) => (e.type === 'log' ? e.text : '')).join('') };
};

test('the step folder and the work root are written as . and <work>; NULs go', () => {
  const paths: [string, string][] = [
    ['/work/step-abc', '.'],
    ['/work', '<work>'],
  ];
  assert.equal(scrub('open /work/step-abc/.in/x.mp4 and /work/other\0', paths), 'open ./.in/x.mp4 and <work>/other');
});

test('whole lines go out after the interval; the rest at the end; a path split between chunks is still replaced', async () => {
  const out = sent();
  const log = new LogForwarder({ emit: out.emit, paths: [['/w/step-1', '.']], intervalMs: 20 });
  log.push(Buffer.from('line one /w/st'));
  log.push(Buffer.from('ep-1/a.mp4\nhalf a li'));
  await new Promise((r) => setTimeout(r, 80));
  assert.equal(out.text(), 'line one ./a.mp4\n');
  log.push(Buffer.from('ne'));
  log.end();
  assert.equal(out.text(), 'line one ./a.mp4\nhalf a line');
});

test('a UTF-8 character split between chunks arrives whole', () => {
  const out = sent();
  const log = new LogForwarder({ emit: out.emit, paths: [] });
  const bytes = Buffer.from('é\n');
  log.push(bytes.subarray(0, 1));
  log.push(bytes.subarray(1));
  log.end();
  assert.equal(out.text(), 'é\n');
});

test('a long log goes in pieces the schema accepts; what waits is bounded to the newest lines, with a line saying what was dropped', () => {
  const out = sent();
  const log = new LogForwarder({ emit: out.emit, paths: [] });
  const line = 'x'.repeat(99) + '\n';
  for (let i = 0; i < 5000; i++) log.push(Buffer.from(line)); // 500,000 characters
  log.push(Buffer.from('the last line\n'));
  log.end();
  assert.ok(out.events.every((e) => e.type === 'log' && e.text.length <= MAX_LOG_EVENT_CHARS));
  const text = out.text();
  const marker = /^\[\.\.\. (\d+) characters of ffmpeg's output dropped: it wrote faster than the log keeps \.\.\.\]\n/.exec(text);
  assert.ok(marker, text.slice(0, 200));
  const kept = text.slice(marker[0].length);
  assert.ok(kept.length <= 4 * MAX_LOG_EVENT_CHARS);
  assert.equal(Number(marker[1]) + kept.length, 500_000 + 'the last line\n'.length);
  assert.ok(kept.startsWith('x'.repeat(99) + '\n'), 'whole lines are kept');
  assert.ok(kept.endsWith('the last line\n'));
});
