import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { keepIdentityOnly, pagedList, RestartBackoff } from './watch.ts';

const command = (name: string): KubernetesObject & Record<string, unknown> => ({
  apiVersion: 'ffmpeg-operator.dev/v1alpha1',
  kind: 'FfmpegCommand',
  metadata: {
    name,
    namespace: 'ns',
    uid: `uid-${name}`,
    resourceVersion: '7',
    labels: { a: 'b' },
    managedFields: [{ manager: 'api', fieldsV1: { 'f:spec': {} } }],
    annotations: { big: 'x'.repeat(100) },
  },
  spec: { request: { ffmpeg_command: '-i x y' } },
  status: { phase: 'SUCCESS', outputs: [{ alias: 'out_1' }] },
});

describe('watch caches', () => {
  test('keepIdentityOnly keeps name, namespace, uid, resourceVersion and labels, and drops spec, status and managedFields', () => {
    const obj = command('c1');
    keepIdentityOnly(obj);
    assert.deepEqual(obj, {
      apiVersion: 'ffmpeg-operator.dev/v1alpha1',
      kind: 'FfmpegCommand',
      metadata: { name: 'c1', namespace: 'ns', uid: 'uid-c1', resourceVersion: '7', labels: { a: 'b' }, deletionTimestamp: undefined },
    });
  });

  test('pagedList reads every page of one snapshot, trims each page, and returns the resourceVersion to watch from', async () => {
    const asked: (string | undefined)[] = [];
    const pages: Record<string, KubernetesListObject<KubernetesObject>> = {
      first: { items: [command('a'), command('b')], metadata: { resourceVersion: '42', _continue: 'p2' } },
      p2: { items: [command('c')], metadata: { resourceVersion: '42', _continue: '' } },
    };
    const list = pagedList(
      (cont, limit) => {
        asked.push(cont);
        assert.equal(limit, 2);
        return Promise.resolve(pages[cont ?? 'first']);
      },
      keepIdentityOnly,
      2,
    );
    const result = await list();
    assert.deepEqual(asked, [undefined, 'p2']);
    assert.deepEqual(
      result.items.map((i) => i.metadata?.name),
      ['a', 'b', 'c'],
    );
    assert.ok(result.items.every((i) => !('spec' in i) && !('status' in i) && !i.metadata?.managedFields));
    assert.equal(result.metadata?.resourceVersion, '42');
    assert.equal(result.metadata?._continue, undefined);
  });

  test('RestartBackoff doubles up to 10 s while each start fails soon after its list, and resets after a run of a minute', () => {
    const backoff = new RestartBackoff();
    const delays: number[] = [];
    let now = 0;
    for (let i = 0; i < 8; i++) {
      backoff.started(now); // the list succeeded...
      now += 50; // ...and the watch was refused at once
      delays.push(backoff.nextDelay(now));
      now += delays.at(-1)!;
    }
    assert.deepEqual(delays, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
    backoff.started(now);
    now += 60_000;
    assert.equal(backoff.nextDelay(now), 200);
  });

  test('RestartBackoff keeps doubling while the list itself fails (no start in between)', () => {
    const backoff = new RestartBackoff();
    backoff.started(0);
    assert.equal(backoff.nextDelay(120_000), 200);
    assert.equal(backoff.nextDelay(120_200), 400);
    assert.equal(backoff.nextDelay(120_600), 800);
  });
});
