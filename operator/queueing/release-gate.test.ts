import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PodRoomGate, type ReleasedStep } from './release-gate.ts';

/** A gate over a list of released steps the test edits, on a clock the test moves. */
function gateFixture(o: { maxPendingPods?: number } = {}) {
  let now = 1_000_000;
  const steps: ReleasedStep[] = [];
  const requeued: [string, string][] = [];
  let opened = 0;
  const gate = new PodRoomGate({
    maxPendingPods: o.maxPendingPods ?? 3,
    maxVcpus: null,
    clock: () => now,
    released: () => steps,
    requeue: (name, reason) => {
      requeued.push([name, reason]);
      // As the backend does: the step's Job is deleted.
      steps.splice(
        steps.findIndex((s) => s.jobName === name),
        1,
      );
    },
  });
  gate.onMayOpen(() => opened++);
  return {
    gate,
    steps,
    requeued,
    opened: () => opened,
    advance: (ms: number) => (now += ms),
    release: (name: string) => steps.push({ jobName: name, placed: false, unschedulable: null }),
    step: (name: string) => steps.find((s) => s.jobName === name)!,
  };
}

test('at most maxPendingPods released steps wait for a node at once; placed ones do not count', () => {
  const f = gateFixture({ maxPendingPods: 3 });
  assert.equal(f.gate.releasable(), 3);
  f.release('a');
  f.release('b');
  assert.equal(f.gate.releasable(), 1);
  f.step('a').placed = true;
  assert.equal(f.gate.releasable(), 2);
  f.release('c');
  f.release('d');
  assert.equal(f.gate.releasable(), 0);
});

test('a pod the scheduler refuses shuts the gate after the hold, not at once', () => {
  const f = gateFixture();
  f.release('a');
  f.step('a').unschedulable = '0/2 nodes are available: 2 Insufficient cpu.';
  assert.equal(f.gate.releasable(), 2, 'a refusal can be fleeting (a pod just ending)');
  f.advance(2_000);
  assert.equal(f.gate.releasable(), 0);
  f.step('a').placed = true; // room came: the scheduler bound it
  f.step('a').unschedulable = null;
  f.gate.podPlaced();
  assert.equal(f.gate.releasable(), 0, 'shut until room is seen to free');
  f.gate.roomMayHaveFreed();
  assert.equal(f.gate.releasable(), 3);
});

test('a pod refused for requeueAfter goes back to the queue, once, and the gate stays shut until room may have freed', () => {
  const f = gateFixture();
  f.release('a');
  f.release('b');
  f.step('a').unschedulable = '0/2 nodes are available: 2 Insufficient cpu.';
  f.gate.tick();
  f.advance(9_000);
  f.gate.tick();
  assert.deepEqual(f.requeued, [], 'not before 10 s');
  f.advance(1_000);
  f.gate.tick();
  f.gate.tick();
  assert.deepEqual(f.requeued, [['a', 'its pod found no node with room for 10 s (0/2 nodes are available: 2 Insufficient cpu.)']]);
  assert.equal(f.gate.releasable(), 0, 'shut: releasing again now would meet the same full cluster');
  f.gate.roomMayHaveFreed(); // a node came
  assert.equal(f.opened(), 1);
  assert.equal(f.gate.releasable(), 2, 'b still waits (not refused)');
});

test('while shut, each placed pod that ends lets one step go, after the pending pods that its room goes to', () => {
  const f = gateFixture({ maxPendingPods: 3 });
  f.release('running');
  f.step('running').placed = true;
  f.release('a');
  f.release('b');
  f.step('a').unschedulable = 'no room';
  f.step('b').unschedulable = 'no room';
  assert.equal(f.gate.releasable(), 1, 'two of three pending pods');
  f.advance(2_000);
  assert.equal(f.gate.releasable(), 0, 'shut');
  f.gate.podEnded(); // 'running' ended: its room goes to a pending pod, which the scheduler binds
  assert.equal(f.gate.releasable(), 0, 'a and b still wait: the freed room is theirs');
  f.step('a').placed = true;
  f.step('a').unschedulable = null;
  f.gate.podPlaced();
  assert.equal(f.gate.releasable(), 0);
  f.advance(10_000);
  f.gate.tick(); // b goes back to the queue
  assert.deepEqual(
    f.requeued.map(([name]) => name),
    ['b'],
  );
  assert.equal(f.gate.releasable(), 0, 'still shut: no room freed');
  f.gate.podEnded();
  assert.equal(f.gate.releasable(), 1, 'one room freed: one step');
  f.release('c');
  assert.equal(f.gate.releasable(), 0);
  assert.equal(f.opened(), 3, 'every end and placement asks for a pass');
});

test('a gate shut by a requeue opens again by itself after the retry time (room freed by pods not ours)', () => {
  const f = gateFixture();
  f.release('a');
  f.step('a').unschedulable = 'no room';
  f.gate.tick();
  f.advance(10_000);
  f.gate.tick();
  assert.equal(f.gate.releasable(), 0);
  f.advance(29_000);
  f.gate.tick();
  assert.equal(f.gate.releasable(), 0);
  f.advance(1_000);
  f.gate.tick();
  assert.equal(f.opened(), 1);
  assert.equal(f.gate.releasable(), 3);
});

test('a pod refused, then placed, then refused again (a new pod) counts its wait from the second refusal', () => {
  const f = gateFixture();
  f.release('a');
  f.step('a').unschedulable = 'no room';
  f.gate.tick();
  f.advance(8_000);
  f.step('a').unschedulable = null;
  f.step('a').placed = true;
  f.gate.tick();
  f.step('a').placed = false;
  f.step('a').unschedulable = 'no room';
  f.gate.tick();
  f.advance(8_000);
  f.gate.tick();
  assert.deepEqual(f.requeued, []);
});
