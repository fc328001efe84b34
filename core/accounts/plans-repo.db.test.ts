// Plans as rows: the defaults the migration creates, creating and changing plans, and accounts that
// reference them (on PGlite, and on PostgreSQL when FFOP_TEST_DATABASE_URL points at it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { applyMigrations } from '../db/migrate.ts';
import { accounts } from '../db/schema.ts';
import { openTestDatabase } from '../db/testing/test-database.ts';
import { AccountsRepo } from './accounts-repo.ts';
import { PlansRepo } from './plans-repo.ts';
import { GB, PlanError, type Plan } from './plans.ts';

const small: Plan = {
  name: 'small',
  maxVcpus: 2,
  maxCommandRunSeconds: 60,
  privateFiles: true,
  storageQuotaBytes: GB / 2,
  processingQuotaBytesPerMonth: 3 * GB,
  requestsPerMinute: 10,
  priority: 5,
};

async function withDb(fn: (db: Awaited<ReturnType<typeof openTestDatabase>>['db']) => Promise<void>) {
  const database = await openTestDatabase();
  try {
    await fn(database.db);
  } finally {
    await database.close();
  }
}

test('the migration creates free and pro with the limits they had when they were code, pro before free in the queue', () =>
  withDb(async (db) => {
    assert.deepEqual(await new PlansRepo(db).list(), [
      {
        name: 'free',
        maxVcpus: 4,
        maxCommandRunSeconds: 300,
        privateFiles: false,
        storageQuotaBytes: 5 * GB,
        processingQuotaBytesPerMonth: 20 * GB,
        requestsPerMinute: 120,
        priority: 0,
      },
      {
        name: 'pro',
        maxVcpus: 32,
        maxCommandRunSeconds: 3600,
        privateFiles: true,
        storageQuotaBytes: 10_000 * GB,
        processingQuotaBytesPerMonth: 100_000 * GB,
        requestsPerMinute: 1200,
        priority: 10,
      },
    ]);
  }));

test('an install migrated from before plans were rows keeps its accounts on their plans', () =>
  withDb(async (db) => {
    // Back to the state before 0003: no plans table, accounts naming free or pro.
    await db.execute(sql`alter table accounts drop constraint accounts_plan_plans_name_fk`);
    await db.execute(sql`drop table plans`);
    await db.execute(sql`delete from ffop_migrations where tag = '0003_plans'`);
    // And before 0007, which adds the plans' priority (and a column of commands).
    await db.execute(sql`alter table commands drop column step_retries, drop column queue_reason, drop column in_cluster_queue`);
    await db.execute(sql`delete from ffop_migrations where tag = '0007_queueing'`);
    await db.insert(accounts).values([
      { id: '00000000-0000-4000-8000-000000000001', name: 'old-free', plan: 'free' },
      { id: '00000000-0000-4000-8000-000000000002', name: 'old-pro', plan: 'pro' },
    ]);
    assert.deepEqual(await applyMigrations(db), ['0003_plans', '0007_queueing']);
    const repo = new AccountsRepo(db);
    assert.equal((await repo.findAccountByName('old-free'))?.plan.maxVcpus, 4);
    assert.equal((await repo.findAccountByName('old-pro'))?.plan.requestsPerMinute, 1200);
  }));

test('create a plan; a duplicate name or a bad name or limit is refused and nothing is written', () =>
  withDb(async (db) => {
    const plans = new PlansRepo(db);
    assert.deepEqual(await plans.create(small), small);
    assert.deepEqual(await plans.get('small'), small);
    await assert.rejects(
      plans.create({ ...small, maxVcpus: 7 }),
      (e) => e instanceof PlanError && /plan "small" already exists/.test(e.message),
    );
    assert.equal((await plans.get('small'))?.maxVcpus, 2, 'the duplicate changed nothing');
    for (const name of ['', 'Big', 'a_b', 'a b', 'x'.repeat(41)]) {
      await assert.rejects(plans.create({ ...small, name }), (e) => e instanceof PlanError && /plan name/.test(e.message), name);
    }
    assert.ok(await plans.create({ ...small, name: 'x'.repeat(40) }), '40 characters is allowed');
    for (const [field, value, column] of [
      ['maxVcpus', 0, 'max_vcpus'],
      ['maxCommandRunSeconds', -5, 'max_command_run_seconds'],
      ['requestsPerMinute', 1.5, 'requests_per_minute'],
      ['storageQuotaBytes', Number.NaN, 'storage_quota_bytes'],
      ['maxVcpus', 2 ** 31, 'max_vcpus'],
      ['priority', -1, 'priority'],
      ['priority', 0.5, 'priority'],
      ['priority', 1_000_001, 'priority'],
    ] as const) {
      await assert.rejects(
        plans.create({ ...small, name: 'bad', [field]: value }),
        (e) => e instanceof PlanError && e.message.startsWith(column),
      );
    }
    assert.equal(await plans.get('bad'), null);
  }));

test('change some limits of a plan; an unknown plan or nothing to change is refused', () =>
  withDb(async (db) => {
    const plans = new PlansRepo(db);
    await plans.create(small);
    assert.deepEqual(await plans.update('small', { maxVcpus: 6, privateFiles: false }), { ...small, maxVcpus: 6, privateFiles: false });
    assert.deepEqual(await plans.get('small'), { ...small, maxVcpus: 6, privateFiles: false });
    await assert.rejects(plans.update('gold', { maxVcpus: 6 }), /unknown plan "gold" \(known: free, pro, small\)/);
    await assert.rejects(plans.update('small', {}), /nothing to change/);
    await assert.rejects(plans.update('small', { requestsPerMinute: 0 }), /requests_per_minute/);
    assert.equal((await plans.get('small'))?.requestsPerMinute, 10);
    // Priority 0 is the lowest, not a missing limit.
    assert.equal((await plans.update('small', { priority: 0 })).priority, 0);
    const { priority: _left, ...withoutPriority } = small;
    assert.equal((await plans.create({ ...withoutPriority, name: 'plain' })).priority, 0, 'a plan created without a priority gets 0');
  }));

test('accounts take any plan in the database and refuse unknown ones, naming the known ones', () =>
  withDb(async (db) => {
    const plans = new PlansRepo(db);
    const repo = new AccountsRepo(db);
    await plans.create(small);
    const a = await repo.createAccount('acme', 'small');
    assert.deepEqual(a.plan, small);
    await assert.rejects(
      repo.createAccount('other', 'gold'),
      (e) => e instanceof PlanError && /unknown plan "gold" \(known: free, pro, small\)/.test(e.message),
    );
    assert.equal(await repo.findAccountByName('other'), null);
    await repo.setPlan(a.id, 'pro');
    assert.equal((await repo.getAccount(a.id))?.plan.name, 'pro');
    await assert.rejects(repo.setPlan(a.id, 'gold'), /unknown plan "gold"/);
    assert.equal((await repo.getAccount(a.id))?.plan.name, 'pro');
    // The database itself refuses an account on a plan that does not exist.
    await assert.rejects(db.insert(accounts).values({ id: '00000000-0000-4000-8000-000000000009', name: 'sneaky', plan: 'gold' }));
  }));

test('a plan change reaches an authenticated (cached) caller on its next request, and admission at once', () =>
  withDb(async (db) => {
    const plans = new PlansRepo(db);
    const repo = new AccountsRepo(db);
    await plans.create(small);
    const a = await repo.createAccount('acme', 'small');
    const { key } = await repo.createKey(a.id, 'main');
    assert.equal((await repo.authenticate(key))?.account.plan.requestsPerMinute, 10); // now cached
    await new PlansRepo(db).update('small', { requestsPerMinute: 3, maxVcpus: 1 });
    assert.equal((await repo.authenticate(key))?.account.plan.requestsPerMinute, 3);
    assert.equal((await repo.getAccount(a.id))?.plan.maxVcpus, 1);
    assert.equal((await repo.listAccounts()).find((x) => x.id === a.id)?.plan.maxVcpus, 1);
  }));
