import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from './sse.ts';

test('events split anywhere are put together; comments and retry lines are no events', () => {
  const parser = new SseParser();
  const text = 'retry: 3000\n\nid: a1\nevent: state\ndata: {"status":"QUEUED"}\n\n: keep-alive\n\nid: a2\nevent: end\ndata: {"x":1}\n\n';
  const events = [];
  for (let i = 0; i < text.length; i += 7) events.push(...parser.push(text.slice(i, i + 7)));
  assert.deepEqual(events, [
    { id: 'a1', event: 'state', data: '{"status":"QUEUED"}' },
    { id: 'a2', event: 'end', data: '{"x":1}' },
  ]);
});

test('several data lines join with newlines; CRLF is read as LF; an unfinished event waits', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('data: a\r\ndata: b\r\n\r\ndata: c'), [{ id: null, event: 'message', data: 'a\nb' }]);
  assert.deepEqual(parser.push('\n\n'), [{ id: null, event: 'message', data: 'c' }]);
});
