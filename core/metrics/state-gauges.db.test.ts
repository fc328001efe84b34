// The state gauges read the database at scrape time: whatever process wrote the rows, the numbers are right.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { testCommandRow } from '../../api/commands/testing/test-command-row.ts';
import { AccountsRepo, type Caller } from '../accounts/accounts-repo.ts';
import { PlansRepo } from '../accounts/plans-repo.ts';
import { newCaller } from '../accounts/testing/new-caller.ts';
import { CommandStatus } from '../commands/command-status.ts';
import { CommandsRepo } from '../commands/commands-repo.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { createMetrics } from './metrics.ts';
import { registerStateGauges } from './state-gauges.ts';
import { parsePrometheusText, valueOf } from './testing/prometheus-text.ts';

test('commands by status, vCPUs in use, queue depth and oldest wait per plan, pending webhook deliveries', async () => {
  const database = await openTestDatabase();
  try {
    const accounts = new AccountsRepo(database.db);
    const commands = new CommandsRepo(database.db);
    await new PlansRepo(database.db).create({
      name: 'idle',
      maxVcpus: 2,
      maxCommandRunSeconds: 60,
      requestsPerMinute: 10,
      storageQuotaBytes: 1e9,
      processingQuotaBytesPerMonth: 1e9,
      privateFiles: false,
    });
    const onFree = await newCaller(accounts, 'on-free', 'free');
    const onPro = await newCaller(accounts, 'on-pro', 'pro');
    const add = async (who: Caller, status: CommandStatus, vcpus: number, createdAt = new Date()) => {
      const row = testCommandRow(who, { vcpu_count: vcpus });
      await commands.insert({ ...row, status, createdAt });
    };
    await add(onFree, CommandStatus.QUEUED, 2, new Date(Date.now() - 600_000));
    await add(onFree, CommandStatus.QUEUED, 1);
    await add(onFree, CommandStatus.PROCESSING, 1);
    await add(onPro, CommandStatus.QUEUED, 4);
    await add(onPro, CommandStatus.PROCESSING, 3);
    // Ended commands are the counter's business, not the gauges'.
    await add(onPro, CommandStatus.SUCCESS, 8);
    await add(onPro, CommandStatus.FAILED, 8);
    for (const status of ['PENDING', 'PENDING', 'DELIVERED', 'FAILED']) {
      await database.db.execute(sql`
        insert into webhook_deliveries (id, account_id, environment_name, event_type, status)
        values (${randomUUID()}, ${onPro.account.id}, 'main', 'webhook.test', ${status})`);
    }

    const metrics = createMetrics();
    const before = parsePrometheusText(await metrics.registry.metrics());
    assert.equal(valueOf(before, 'ffop_vcpus_in_use'), undefined, 'only a registry the gauges were registered on has them');
    registerStateGauges(metrics.registry, database.db);
    const s = parsePrometheusText(await metrics.registry.metrics());

    assert.equal(valueOf(s, 'ffop_commands', { status: 'QUEUED' }), 3);
    assert.equal(valueOf(s, 'ffop_commands', { status: 'PROCESSING' }), 2);
    assert.equal(valueOf(s, 'ffop_vcpus_in_use'), 4);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'free' }), 2);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'pro' }), 1);
    assert.equal(valueOf(s, 'ffop_queue_depth', { plan: 'idle' }), 0, 'a plan with an empty queue shows 0');
    assert.ok(valueOf(s, 'ffop_queue_oldest_wait_seconds', { plan: 'free' })! >= 600);
    assert.ok(valueOf(s, 'ffop_queue_oldest_wait_seconds', { plan: 'pro' })! < 600);
    assert.equal(valueOf(s, 'ffop_queue_oldest_wait_seconds', { plan: 'idle' }), 0);
    assert.equal(valueOf(s, 'ffop_webhook_deliveries_pending'), 2);

    // Read again at the next scrape: a change by any process shows.
    await database.db.execute(sql`update commands set status = 'SUCCESS' where status = 'PROCESSING'`);
    const after = parsePrometheusText(await metrics.registry.metrics());
    assert.equal(valueOf(after, 'ffop_commands', { status: 'PROCESSING' }), 0);
    assert.equal(valueOf(after, 'ffop_vcpus_in_use'), 0);
  } finally {
    await database.close();
  }
});
