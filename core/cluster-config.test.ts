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
