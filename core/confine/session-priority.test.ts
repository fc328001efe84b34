import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setSessionNiceness } from './session-priority.ts';

const autogroupOf = (pid: number) => readFileSync(`/proc/${pid}/autogroup`, 'utf8').trim();
const noAutogroup = existsSync('/proc/self/autogroup') ? false : 'this kernel has no autogroup scheduling';

/** A child in a session of its own (as spawnPrepared and the runners start), killed when `body` ends. */
function withDetachedChild(body: (pid: number) => void): void {
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  try {
    body(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

test('a new session gets the niceness given; ours keeps its own', { skip: noAutogroup }, () => {
  const ours = autogroupOf(process.pid);
  withDetachedChild((pid) => {
    assert.match(autogroupOf(pid), / nice 0$/, 'a new session starts at nice 0 whatever ours is');
    assert.equal(setSessionNiceness(pid, 10), true);
    assert.match(autogroupOf(pid), / nice 10$/);
    assert.equal(autogroupOf(process.pid), ours);
  });
});

test('niceness 0 or below is left alone, and a process that is gone is no error', { skip: noAutogroup }, () => {
  withDetachedChild((pid) => {
    assert.equal(setSessionNiceness(pid, 0), false);
    assert.equal(setSessionNiceness(pid, -5), false);
    assert.match(autogroupOf(pid), / nice 0$/);
  });
  assert.equal(setSessionNiceness(undefined, 10), false);
  assert.equal(setSessionNiceness(2 ** 22 + 1, 10), false); // above pid_max: no such process
});
