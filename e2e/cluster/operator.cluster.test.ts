// Operator robustness: two replicas never both act (Lease), and watches survive an API server that
// closes them every few seconds (--min-request-timeout).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startClusterService, type ClusterService } from './service-fixture.ts';

describe('operator replicas and watches', () => {
  let svc: ClusterService;
  before(async () => {
    svc = await startClusterService({ minRequestTimeout: 3 });
  });
  after(async () => {
    await svc?.close();
  });

  const quick = {
    ffmpeg_command: '-f lavfi -i testsrc=size=32x32:duration=0.3 -c:v libx264 -preset ultrafast {{out_1}}',
    output_files: { out_1: 'o.mp4' },
    vcpu_count: 1,
  };

  test('watches closed by the API server are restarted: commands still run after several watch timeouts', async () => {
    await new Promise((r) => setTimeout(r, 10_000)); // > 2 x min-request-timeout: every watch has ended at least once
    const api = svc.client();
    const { record } = await api.waitForEnd(await api.submit(quick), 60_000);
    assert.equal(record.status, 'SUCCESS', JSON.stringify(record));
  });

  test('a second replica waits while the first leads, and takes over when it stops', async () => {
    const second = await svc.startOperator('operator-standby');
    let standbyLeads = false;
    void second.leading.then(() => (standbyLeads = true));
    await new Promise((r) => setTimeout(r, 6000)); // longer than the 4 s lease
    assert.equal(standbyLeads, false, 'two replicas led at once');
    assert.equal(second.reconciler(), null);

    const api = svc.client();
    const during = await api.submit(quick);
    assert.equal((await api.waitForEnd(during, 60_000)).record.status, 'SUCCESS');

    await svc.operator.stop();
    svc.operator = second;
    await second.leading;
    const after = await api.submit(quick);
    assert.equal((await api.waitForEnd(after, 60_000)).record.status, 'SUCCESS');
  });
});
