// Benchmark: how late a healthy account's webhook delivery arrives while other accounts flood a
// receiver that accepts connections and never answers. The worker runs with its defaults (attempt
// deadline, attempts in flight) on a real database; the flood is queued straight into the delivery
// table (as a burst of ended commands would be), then the healthy account's test delivery one second later.
// Run: npx tsx e2e/bench/webhook-fairness.ts [flood deliveries per flooding account, default 40] [flooding accounts, default 1]
// (FFOP_TEST_DATABASE_URL picks the database, as in the tests; default PGlite in memory.)
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { newCaller } from '../../core/accounts/testing/new-caller.ts';
import { CommandsRepo } from '../../core/commands/commands-repo.ts';
import { openDatabase } from '../../core/db/database.ts';
import { rowsOf } from '../../core/db/migrate.ts';
import { createTestDatabaseUrl } from '../../core/db/testing/test-database.ts';
import { FilesRepo } from '../../core/files/files-repo.ts';
import { createStorage } from '../../core/storage/create-storage.ts';
import { WebhooksRepo } from '../../core/webhooks/webhooks-repo.ts';
import { WebhookWorker } from '../../api/webhooks/webhook-worker.ts';

const flood = Number(process.argv[2] ?? 40);
const flooderCount = Number(process.argv[3] ?? 1);

async function listen(onRequest: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(onRequest);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

let healthyArrived: number | null = null;
const blackHole = await listen(() => {}); // accepts, reads the request, never answers
const healthy = await listen((req, res) => {
  req.resume();
  healthyArrived ??= performance.now();
  res.writeHead(200).end();
});
const { url, drop } = await createTestDatabaseUrl();
const database = await openDatabase(url);
const accounts = new AccountsRepo(database.db);
const flooders = [];
for (let i = 0; i < flooderCount; i++) flooders.push(await newCaller(accounts, `flooder-${i}`, 'pro'));
const victim = await newCaller(accounts, 'victim', 'pro');
const repo = new WebhooksRepo(database.db);
for (const flooder of flooders) await repo.set(flooder.account.id, 'main', `http://127.0.0.1:${blackHole.port}/hooks`, false, new Date());
await repo.set(victim.account.id, 'main', `http://127.0.0.1:${healthy.port}/hooks`, false, new Date());
const allow = [`127.0.0.1:${blackHole.port}`, `127.0.0.1:${healthy.port}`];
const worker = new WebhookWorker({
  database,
  commands: new CommandsRepo(database.db),
  files: new FilesRepo(database.db),
  storage: await createStorage({
    kind: 'local',
    publicUrl: 'http://127.0.0.1:1',
    signingKey: 'webhook-fairness-bench-key',
    localDir: '/tmp/ffop-bench-unused',
  }),
  logger: pino({ level: 'silent' }),
  allowAddresses: allow,
});
await worker.start();

const queue = (accountId: string) =>
  database.db.execute(sql`
    insert into webhook_deliveries (id, account_id, environment_name, event_type, status, next_attempt_at)
    values (gen_random_uuid(), ${accountId}, 'main', 'webhook.test', 'PENDING', now())`);
for (let i = 0; i < flood; i++) for (const flooder of flooders) await queue(flooder.account.id);
await database.db.execute(sql`notify ffop_webhook_delivery`);
await new Promise((r) => setTimeout(r, 1000));
const queued = performance.now();
await queue(victim.account.id);
await database.db.execute(sql`notify ffop_webhook_delivery`);
while (healthyArrived === null) await new Promise((r) => setTimeout(r, 10));
const delayMs = healthyArrived - queued;
const attempted = await database.db.execute(
  sql`select count(*)::int as n from webhook_deliveries where account_id <> ${victim.account.id} and (jsonb_array_length(attempts) > 0 or next_attempt_at > now())`,
);
console.log(
  `${flooderCount} account(s) flooding a black hole with ${flood} deliveries each: the healthy account's delivery arrived ${(delayMs / 1000).toFixed(2)} s after it was queued ` +
    `(flood deliveries claimed or tried by then: ${rowsOf<{ n: number }>(attempted)[0].n})`,
);
await worker.stop();
await database.close();
await drop();
for (const s of [blackHole.server, healthy.server]) {
  s.closeAllConnections();
  s.close();
}
