// Cluster-mode settings: runner placement (node selector, tolerations, priority class, host network).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadClusterConfig } from './cluster-config.ts';

const base = { FFOP_REPORT_URL: 'http://api:8080/internal/v1/job-events', FFOP_JOB_TOKEN_SECRET: 's' };
const load = (env: Record<string, string>) => loadClusterConfig({ ...base, ...env });

describe('loadClusterConfig: runner placement', () => {
  test('unset: no node selector, tolerations or priority class; no host network', () => {
    const c = load({});
    assert.equal(c.runnerNodeSelector, undefined);
    assert.equal(c.runnerTolerations, undefined);
    assert.equal(c.runnerPriorityClass, undefined);
    assert.equal(c.runnerHostNetwork, false);
    // Empty values (what a chart renders for "not set") mean unset too.
    const empty = load({
      FFOP_RUNNER_NODE_SELECTOR: '',
      FFOP_RUNNER_TOLERATIONS: ' ',
      FFOP_RUNNER_PRIORITY_CLASS: '',
      FFOP_RUNNER_HOST_NETWORK: '',
    });
    assert.deepEqual(
      [empty.runnerNodeSelector, empty.runnerTolerations, empty.runnerPriorityClass, empty.runnerHostNetwork],
      [undefined, undefined, undefined, false],
    );
  });

  test('set: parsed as given', () => {
    const tolerations = [
      { key: 'media', operator: 'Equal', value: 'yes', effect: 'NoSchedule' },
      { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
    ];
    const c = load({
      FFOP_RUNNER_NODE_SELECTOR: '{"node-pool":"media","kubernetes.io/arch":"amd64"}',
      FFOP_RUNNER_TOLERATIONS: JSON.stringify(tolerations),
      FFOP_RUNNER_PRIORITY_CLASS: 'batch-low',
      FFOP_RUNNER_HOST_NETWORK: 'true',
    });
    assert.deepEqual(c.runnerNodeSelector, { 'node-pool': 'media', 'kubernetes.io/arch': 'amd64' });
    assert.deepEqual(c.runnerTolerations, tolerations);
    assert.equal(c.runnerPriorityClass, 'batch-low');
    assert.equal(c.runnerHostNetwork, true);
    assert.equal(load({ FFOP_RUNNER_HOST_NETWORK: 'false' }).runnerHostNetwork, false);
    assert.equal(load({ FFOP_RUNNER_HOST_NETWORK: '1' }).runnerHostNetwork, true);
    assert.deepEqual(load({ FFOP_RUNNER_TOLERATIONS: '[]' }).runnerTolerations, []);
  });

  const refusals: [string, Record<string, string>, RegExp][] = [
    [
      'node selector not JSON',
      { FFOP_RUNNER_NODE_SELECTOR: 'node-pool=media' },
      /^FFOP_RUNNER_NODE_SELECTOR is not valid JSON \(.+\); expected e\.g\. \{"node-pool":"media"\}$/,
    ],
    [
      'node selector an array',
      { FFOP_RUNNER_NODE_SELECTOR: '["media"]' },
      /^FFOP_RUNNER_NODE_SELECTOR must be a JSON object of label names to values/,
    ],
    [
      'node selector value not a string',
      { FFOP_RUNNER_NODE_SELECTOR: '{"gpu":true}' },
      /^FFOP_RUNNER_NODE_SELECTOR: the value of "gpu" must be a string, got true$/,
    ],
    ['tolerations not JSON', { FFOP_RUNNER_TOLERATIONS: '[{key: media}]' }, /^FFOP_RUNNER_TOLERATIONS is not valid JSON/],
    [
      'tolerations an object',
      { FFOP_RUNNER_TOLERATIONS: '{"key":"media"}' },
      /^FFOP_RUNNER_TOLERATIONS must be a JSON array of tolerations/,
    ],
    ['toleration not an object', { FFOP_RUNNER_TOLERATIONS: '["media"]' }, /^FFOP_RUNNER_TOLERATIONS\[0\] must be an object/],
    [
      'toleration with an unknown field',
      { FFOP_RUNNER_TOLERATIONS: '[{"key":"a"},{"keys":"b"}]' },
      /^FFOP_RUNNER_TOLERATIONS\[1\] has an unknown field "keys"/,
    ],
    [
      'toleration with a bad operator',
      { FFOP_RUNNER_TOLERATIONS: '[{"key":"a","operator":"In"}]' },
      /^FFOP_RUNNER_TOLERATIONS\[0\]\.operator must be one of Exists, Equal, got "In"$/,
    ],
    [
      'toleration with a bad effect',
      { FFOP_RUNNER_TOLERATIONS: '[{"key":"a","effect":"NoRun"}]' },
      /^FFOP_RUNNER_TOLERATIONS\[0\]\.effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got "NoRun"$/,
    ],
    [
      'tolerationSeconds not an integer',
      { FFOP_RUNNER_TOLERATIONS: '[{"key":"a","tolerationSeconds":"30"}]' },
      /^FFOP_RUNNER_TOLERATIONS\[0\]\.tolerationSeconds must be an integer, got "30"$/,
    ],
    ['host network not a boolean', { FFOP_RUNNER_HOST_NETWORK: 'yes' }, /^FFOP_RUNNER_HOST_NETWORK must be true or false, got "yes"$/],
  ];
  for (const [what, env, message] of refusals) {
    test(`refused with a clear message: ${what}`, () => assert.throws(() => load(env), { message }));
  }
});

describe('loadClusterConfig: queueing', () => {
  test('unset: built-in queueing, 10 pending pods, no vCPU cap, requeue after 10 s; the default disk request', () => {
    const c = load({ FFOP_QUEUEING_MODE: '', FFOP_QUEUE_MAX_VCPUS: '' });
    assert.deepEqual(c.queueing, { mode: 'builtin', maxPendingPods: 10, maxVcpus: null, requeueAfterSeconds: 10, retrySeconds: 30 });
    assert.equal(c.runnerDiskRequest, undefined);
  });

  test('built-in settings and Kueue settings as given', () => {
    const builtin = load({
      FFOP_QUEUE_MAX_PENDING_PODS: '4',
      FFOP_QUEUE_MAX_VCPUS: '64',
      FFOP_QUEUE_REQUEUE_AFTER_SECONDS: '30',
      FFOP_QUEUE_RETRY_SECONDS: '120',
      FFOP_RUNNER_DISK_REQUEST: '20Gi',
    });
    assert.deepEqual(builtin.queueing, { mode: 'builtin', maxPendingPods: 4, maxVcpus: 64, requeueAfterSeconds: 30, retrySeconds: 120 });
    assert.equal(builtin.runnerDiskRequest, '20Gi');
    const kueue = load({
      FFOP_QUEUEING_MODE: 'kueue',
      FFOP_KUEUE_QUEUE_NAME: 'media',
      FFOP_KUEUE_PRIORITY_CLASSES: 'free=ffop-free, pro=ffop-pro',
    });
    assert.deepEqual(kueue.queueing, { mode: 'kueue', queueName: 'media', priorityClasses: { free: 'ffop-free', pro: 'ffop-pro' } });
  });

  test('mistakes stop the operator at start, naming the setting', () => {
    for (const [env, message] of [
      [{ FFOP_QUEUEING_MODE: 'fifo' }, /FFOP_QUEUEING_MODE must be "builtin" or "kueue", got "fifo"/],
      [{ FFOP_QUEUE_MAX_PENDING_PODS: '0' }, /FFOP_QUEUE_MAX_PENDING_PODS must be a whole number of 1 or more, got "0"/],
      [{ FFOP_QUEUE_MAX_VCPUS: '2.5' }, /FFOP_QUEUE_MAX_VCPUS must be a whole number/],
      [{ FFOP_RUNNER_DISK_REQUEST: 'ten gigs' }, /FFOP_RUNNER_DISK_REQUEST must be a Kubernetes quantity/],
      [{ FFOP_QUEUEING_MODE: 'kueue' }, /FFOP_KUEUE_QUEUE_NAME .* must be set/],
      [{ FFOP_QUEUEING_MODE: 'kueue', FFOP_KUEUE_QUEUE_NAME: 'q', FFOP_KUEUE_PRIORITY_CLASSES: 'free' }, /plan=class pairs/],
    ] as const) {
      assert.throws(() => load(env), message);
    }
  });
});

describe('loadClusterConfig: FFOP_WATCH_NAMESPACES', () => {
  test('unset: the own namespace only; a list always includes it; * is every namespace', () => {
    assert.deepEqual(load({ FFOP_NAMESPACE: 'ops' }).watchNamespaces, ['ops']);
    assert.deepEqual(load({ FFOP_NAMESPACE: 'ops', FFOP_WATCH_NAMESPACES: 'media-team, ops,web' }).watchNamespaces, [
      'ops',
      'media-team',
      'web',
    ]);
    assert.equal(load({ FFOP_WATCH_NAMESPACES: ' * ' }).watchNamespaces, 'all');
  });

  test('a name Kubernetes would not allow stops the operator at start, naming it', () => {
    for (const bad of ['Media', 'a_b', 'x,', '-a', 'a'.repeat(64)]) {
      assert.throws(() => load({ FFOP_WATCH_NAMESPACES: bad }), /FFOP_WATCH_NAMESPACES: ".*" is not a namespace name/);
    }
  });
});
