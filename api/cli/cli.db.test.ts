// The accounts/keys CLI against a real database, and the keys it makes against the API's auth.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { openDatabase } from '../../core/db/database.ts';
import { createTestDatabaseUrl } from '../../core/db/testing/test-database.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './cli.ts';

let dropDb: () => Promise<void>;
let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffop-cli-'));
  const db = await createTestDatabaseUrl();
  // PGlite in a folder: the CLI opens and closes the database on every call, as a user's shell would.
  process.env.FFOP_DATABASE_URL = db.url === 'pglite:memory' ? `pglite:${join(dir, 'db')}` : db.url;
  dropDb = db.drop;
});
after(async () => {
  await dropDb();
  await rm(dir, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; out: string[] }> {
  const out: string[] = [];
  const code = await runCli(args, (l) => out.push(l));
  return { code, out };
}

test('create an account, keys in two environments, list, change plan, revoke', async () => {
  assert.equal((await cli('accounts', 'create', 'acme', '--plan', 'pro')).code, 0);
  assert.match((await cli('accounts', 'list')).out.join('\n'), /acme\tpro/);
  const main = (await cli('keys', 'create', 'acme')).out[0];
  const test = (await cli('keys', 'create', 'acme', '--env', 'test', '--label', 'ci')).out[0];
  assert.match(main, /^ffo_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/);
  const listed = (await cli('keys', 'list', 'acme')).out;
  assert.equal(listed.length, 2);
  assert.ok(listed.some((l) => l.includes('\ttest\tactive\tci')));
  assert.ok(!listed.join('').includes(main.slice(17)), 'secrets are never listed');

  const database = await openDatabase(process.env.FFOP_DATABASE_URL!);
  try {
    const accounts = new AccountsRepo(database.db);
    assert.equal((await accounts.authenticate(test))?.environment, 'test');
    assert.equal((await accounts.authenticate(main))?.account.plan.name, 'pro');
  } finally {
    await database.close();
  }
  assert.equal((await cli('accounts', 'set-plan', 'acme', 'free')).code, 0);
  assert.equal((await cli('keys', 'revoke', main)).code, 0);
  const again = await cli('keys', 'revoke', main);
  assert.equal(again.code, 2);
  const database2 = await openDatabase(process.env.FFOP_DATABASE_URL!);
  try {
    const accounts = new AccountsRepo(database2.db);
    assert.equal(await accounts.authenticate(main), null);
    assert.equal((await accounts.authenticate(test))?.account.plan.name, 'free');
  } finally {
    await database2.close();
  }
});

test('mistakes are explained, with exit code 2', async () => {
  assert.match((await cli('accounts', 'create', 'x', '--plan', 'gold')).out[0], /unknown plan "gold"/);
  assert.match((await cli('keys', 'create', 'nobody')).out[0], /no account named "nobody"/);
  assert.equal((await cli('keys', 'create', 'acme', '--env', 'Bad Env')).code, 2);
  assert.equal((await cli('frobnicate')).code, 2);
  assert.match((await cli('plans')).out.join('\n'), /free\tmax vCPUs 4/);
});

const TEAM_LIMITS = [
  '--max-vcpus',
  '8',
  '--max-run-seconds',
  '600',
  '--requests-per-minute',
  '1000',
  '--storage-quota-gb',
  '0.5',
  '--processing-quota-gb',
  '2',
  '--private-files',
  'yes',
];

test('plans: create, change and list them; accounts go on any plan in the database', async () => {
  const created = await cli('plans', 'create', 'team', ...TEAM_LIMITS);
  assert.equal(created.code, 0, created.out.join('\n'));
  assert.equal((await cli('plans', 'set', 'team', '--max-vcpus', '6', '--private-files', 'no', '--priority', '7')).code, 0);
  const listed = (await cli('plans')).out;
  assert.deepEqual(listed.find((l) => l.startsWith('team\t'))?.split('\t'), [
    'team',
    'max vCPUs 6',
    'max run 600 s',
    'requests/min 1000',
    'storage 0.5 GB',
    'processing 2 GB/month',
    'private files no',
    'priority 7',
  ]);
  assert.ok(
    listed.some((l) => l.startsWith('pro\tmax vCPUs 32\t')),
    'the defaults are listed too',
  );
  assert.equal((await cli('accounts', 'create', 'teamco', '--plan', 'team')).code, 0);
  assert.match((await cli('accounts', 'list')).out.join('\n'), /teamco\tteam/);
  assert.equal((await cli('accounts', 'set-plan', 'teamco', 'free')).code, 0);
  const refused = await cli('accounts', 'set-plan', 'teamco', 'gold');
  assert.equal(refused.code, 2);
  assert.match(refused.out[0], /unknown plan "gold" \(known: free, pro, team\)/);
});

test('plans: mistakes are explained with exit code 2, naming the option', async () => {
  const cases: [string[], RegExp][] = [
    [['plans', 'create', 'team', ...TEAM_LIMITS], /plan "team" already exists/],
    [
      ['plans', 'create', 'half', '--max-vcpus', '2'],
      /missing --max-run-seconds, --requests-per-minute, --storage-quota-gb, --processing-quota-gb, --private-files/,
    ],
    [['plans', 'create', 'Not_A_Slug', ...TEAM_LIMITS], /plan name "Not_A_Slug" must be 1 to 40 of a-z, 0-9 and -/],
    [['plans', 'set', 'gold', '--max-vcpus', '2'], /unknown plan "gold" \(known: free, pro, team\)/],
    [['plans', 'set', 'team', '--max-vcpus', 'two'], /--max-vcpus must be a positive whole number, not "two"/],
    [['plans', 'set', 'team', '--max-run-seconds', '0'], /--max-run-seconds must be a positive whole number, not "0"/],
    [['plans', 'set', 'team', '--requests-per-minute=-3'], /--requests-per-minute must be a positive whole number, not "-3"/],
    [['plans', 'set', 'team', '--requests-per-minute', '2.5'], /--requests-per-minute must be a positive whole number/],
    [['plans', 'set', 'team', '--storage-quota-gb', '0'], /--storage-quota-gb must be a positive number of GB, not "0"/],
    [['plans', 'set', 'team', '--processing-quota-gb', '1e3'], /--processing-quota-gb must be a positive number of GB/],
    [['plans', 'set', 'team', '--private-files', 'maybe'], /--private-files must be yes or no, not "maybe"/],
    [['plans', 'set', 'team', '--max-vcpus', '-1'], /--max-vcpus/],
    [['plans', 'set', 'team', '--max-cpus', '1'], /Unknown option '--max-cpus'/],
    [['plans', 'set', 'team'], /nothing to change/],
    [['plans', 'set', 'team', '--priority=-1'], /--priority must be a whole number from 0, not "-1"/],
    [['plans', 'set', 'team', '--priority', '2000000'], /priority must be a whole number from 0 to 1000000, not 2000000/],
  ];
  for (const [args, message] of cases) {
    const { code, out } = await cli(...args);
    assert.equal(code, 2, args.join(' '));
    assert.match(out[0], message, args.join(' '));
  }
  assert.match((await cli('plans')).out.find((l) => l.startsWith('team\t')) ?? '', /max vCPUs 6\t/, 'no mistake changed the plan');
});

test('through the admin socket, a plan edit applies to a key the service has just authenticated', async () => {
  const { startService } = await import('../../e2e/harness.ts');
  const { adminSocketPath, runThroughAdminSocket } = await import('./admin-socket.ts');
  const svc = await startService();
  const admin = async (...args: string[]) => {
    const out: string[] = [];
    const code = await runThroughAdminSocket(adminSocketPath(svc.dataDir), args, (l) => out.push(l));
    assert.equal(code, 0, `${args.join(' ')}: ${out.join('\n')}`);
    return out;
  };
  try {
    await admin('plans', 'create', 'team', ...TEAM_LIMITS);
    await admin('accounts', 'create', 'teamco', '--plan', 'team');
    const api = svc.client((await admin('keys', 'create', 'teamco'))[0]);
    const body = {
      ffmpeg_command: '-f lavfi -i color=s=32x32:d=0.1 -frames:v 1 {{out_1}}',
      output_files: { out_1: 'a.png' },
      vcpu_count: 4,
    };
    const { record } = await api.waitForEnd(await api.submit(body));
    assert.equal(record.status, 'SUCCESS', 'team allows 8 vCPUs');

    await admin('plans', 'set', 'team', '--max-vcpus', '2');
    const refused = await api.post('/v1/run-ffmpeg-command', body);
    assert.equal(refused.status, 403);
    assert.match(refused.body.detail, /vcpu_count 4 exceeds the maximum of 2 vCPUs of your plan \(team\)/);

    for (let i = 0; i < 3; i++) assert.equal((await api.get('/v1/commands')).status, 200);
    await admin('plans', 'set', 'team', '--requests-per-minute', '2');
    assert.equal((await api.get('/v1/commands')).status, 200);
    assert.equal((await api.get('/v1/commands')).status, 200);
    const limited = await api.withoutRetries().get('/v1/commands'); // the 429 is what is tested
    assert.equal(limited.status, 429);
    assert.match(limited.body.detail, /2 requests per minute/);
  } finally {
    await svc.close();
  }
});

test('while the embedded service runs, the CLI works (through its admin socket when PGlite is locked)', async () => {
  const { startService } = await import('../../e2e/harness.ts');
  const { execFile } = await import('node:child_process');
  const svc = await startService();
  try {
    const env = {
      ...process.env,
      FFOP_DATA_DIR: svc.dataDir,
      FFOP_DATABASE_URL:
        svc.service.database.driver === 'pglite' ? `pglite:${join(svc.dataDir, 'db')}` : (process.env.FFOP_DATABASE_URL_OF_SERVICE ?? ''),
    };
    if (svc.service.database.driver !== 'pglite') return; // PostgreSQL has no lock: covered by the test above
    const run = (...args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) =>
        execFile(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'cli.ts'), ...args], { env }, (err, stdout) =>
          resolve({ code: err ? (err as any).code : 0, stdout }),
        ),
      );
    const created = await run('accounts', 'create', 'live', '--plan', 'pro');
    assert.equal(created.code, 0, created.stdout);
    const key = (await run('keys', 'create', 'live')).stdout.trim();
    const res = await svc.client(key).get('/v1/commands');
    assert.equal(res.status, 200, 'a key made while the service runs works at once');
    // The service has just authenticated the key (and remembers it briefly): revoking it through the
    // CLI still takes effect on the very next request.
    const keyId = key.split('_')[1];
    assert.equal((await run('keys', 'revoke', keyId)).code, 0);
    assert.equal((await svc.client(key).get('/v1/commands')).status, 401, 'a revoked key is refused at once');
  } finally {
    await svc.close();
  }
});
