// `npm run cli -- <command>`: manage accounts and API keys in the service's database.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AccountsRepo } from '../../core/accounts/accounts-repo.ts';
import { PlansRepo } from '../../core/accounts/plans-repo.ts';
import { GB, PlanError, type Plan, type PlanLimits } from '../../core/accounts/plans.ts';
import { loadConfig } from '../../core/config.ts';
import { openDatabase, type Database } from '../../core/db/database.ts';
import { adminSocketPath, runThroughAdminSocket } from './admin-socket.ts';
import { runWebhookCli, WEBHOOK_USAGE, WebhookUsageError } from '../webhooks/webhook-cli.ts';

const USAGE = `usage: npm run cli -- <command>
  accounts create <name> [--plan <plan>]      create an account (default plan: free)
  accounts list                                list accounts with their plans
  accounts set-plan <name> <plan>              change an account's plan (any plan in the database)
  keys create <account> [--env main] [--label text]   create an API key (printed once)
  keys list <account>                          list an account's keys (ids only)
  keys revoke <key-id | full key>              revoke a key
  plans                                        list plans and what they allow
  plans create <name> --max-vcpus N --max-run-seconds N --requests-per-minute N
        --storage-quota-gb N --processing-quota-gb N --private-files yes|no [--priority N]
                                               create a plan (every limit is required; priority
                                               defaults to 0: higher-priority plans' queued
                                               commands start first)
  plans set <name> [--max-vcpus N] [...]       change some limits of a plan (same options)
${WEBHOOK_USAGE}
Plan names are 1 to 40 of a-z, 0-9 and -. Limits are positive, priority 0 or more; GB = 10^9 bytes (may be decimal).
The database is the service's (FFOP_DATA_DIR / FFOP_DATABASE_URL, as for the service). While the
embedded service runs (PGlite allows one process), the command goes through its admin socket.`;

/** Runs one CLI command. With `database` (the running service's admin socket) that database is used. */
export async function runCli(
  argv: string[],
  out: (line: string) => void,
  opts: { database?: Database; webhookAllowAddresses?: string[] } = {},
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    out(`error: ${(err as Error).message}`); // unknown option, or a value that looks like an option
    return 2;
  }
  const { positionals, values } = parsed;
  const [group, action, ...rest] = positionals;
  if (values.help || !group) {
    out(USAGE);
    return group ? 0 : 2;
  }
  const database = opts.database ?? (await openDatabase(loadConfig().databaseUrl));
  try {
    const accounts = new AccountsRepo(database.db);
    const plans = new PlansRepo(database.db);
    const account = async (name: string | undefined) => {
      if (!name) throw new UsageError('missing account name');
      const found = await accounts.findAccountByName(name);
      if (!found) throw new UsageError(`no account named "${name}"`);
      return found;
    };
    switch (`${group} ${action ?? 'list'}`) {
      case 'plans list':
        for (const p of await plans.list()) out(planLine(p));
        return 0;
      case 'plans create': {
        if (!rest[0]) throw new UsageError('missing plan name');
        const limits = planLimits(values);
        const missing = Object.keys(PLAN_OPTIONS).filter(
          (o) => !OPTIONAL_PLAN_OPTIONS.has(o) && (values as Record<string, unknown>)[o] === undefined,
        );
        if (missing.length) throw new UsageError(`plans create needs every limit; missing ${missing.map((o) => `--${o}`).join(', ')}`);
        out(`created plan ${planLine(await plans.create({ name: rest[0], ...(limits as PlanLimits) }))}`);
        return 0;
      }
      case 'plans set': {
        if (!rest[0]) throw new UsageError('missing plan name');
        out(`changed plan ${planLine(await plans.update(rest[0], planLimits(values)))}`);
        return 0;
      }
      case 'accounts create': {
        if (!rest[0]) throw new UsageError('missing account name');
        const a = await accounts.createAccount(rest[0], values.plan ?? 'free');
        out(`created account ${a.name} (${a.id}) on plan ${a.plan.name}`);
        return 0;
      }
      case 'accounts list':
        for (const a of await accounts.listAccounts()) out(`${a.name}\t${a.plan.name}\t${a.id}`);
        return 0;
      case 'accounts set-plan': {
        const a = await account(rest[0]);
        if (!rest[1]) throw new UsageError('missing plan');
        await accounts.setPlan(a.id, rest[1]);
        out(`account ${a.name} is now on plan ${rest[1]}`);
        return 0;
      }
      case 'keys create': {
        const a = await account(rest[0]);
        const k = await accounts.createKey(a.id, values.env ?? 'main', values.label);
        out(k.key);
        return 0;
      }
      case 'keys list': {
        const a = await account(rest[0]);
        for (const k of await accounts.listKeys(a.id)) {
          out(`${k.id}\t${k.environment}\t${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}\t${k.label ?? ''}`);
        }
        return 0;
      }
      case 'keys revoke': {
        if (!rest[0]) throw new UsageError('missing key id');
        const id = rest[0].startsWith('ffo_') ? rest[0].split('_')[1] : rest[0];
        if (!(await accounts.revokeKey(id, new Date()))) throw new UsageError(`no active key with id ${id}`);
        out(`revoked key ${id}`);
        return 0;
      }
      case 'webhook set':
      case 'webhook show':
      case 'webhook delete':
      case 'webhook test':
      case 'webhook deliveries':
        return await runWebhookCli(
          database.db,
          {
            action,
            account: await account(rest[0]),
            environment: values.env ?? values.environment ?? 'main',
            url: values.url,
            rotateSecret: values['rotate-secret'] ?? false,
            limit: values.limit,
            allowAddresses: opts.webhookAllowAddresses ?? loadConfig().webhookAllowAddresses,
          },
          out,
        );
      default:
        throw new UsageError(`unknown command "${positionals.join(' ')}"`);
    }
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof WebhookUsageError ||
      err instanceof PlanError ||
      (err as Error).message.startsWith('environment')
    ) {
      out(`error: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  } finally {
    if (!opts.database) await database.close();
  }
}

class UsageError extends Error {}

/** Plan limit options: the Plan field each sets, and how its value is written. */
const PLAN_OPTIONS = {
  'max-vcpus': ['maxVcpus', 'count'],
  'max-run-seconds': ['maxCommandRunSeconds', 'count'],
  'requests-per-minute': ['requestsPerMinute', 'count'],
  'storage-quota-gb': ['storageQuotaBytes', 'gb'],
  'processing-quota-gb': ['processingQuotaBytesPerMonth', 'gb'],
  'private-files': ['privateFiles', 'yes|no'],
  priority: ['priority', 'priority'],
} as const;
/** Options plans create may leave out. */
const OPTIONAL_PLAN_OPTIONS = new Set(['priority']);

const OPTIONS = {
  plan: { type: 'string' },
  env: { type: 'string' },
  label: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  // webhook (--environment is the long form of --env)
  environment: { type: 'string' },
  url: { type: 'string' },
  'rotate-secret': { type: 'boolean' },
  limit: { type: 'string' },
  ...Object.fromEntries(Object.keys(PLAN_OPTIONS).map((o) => [o, { type: 'string' }])),
} as const satisfies ParseArgsConfig['options'];

/** The plan limits given on the command line; a bad value is a UsageError naming its option. */
function planLimits(values: Record<string, unknown>): Partial<PlanLimits> {
  const limits: Record<string, number | boolean> = {};
  for (const [option, [field, kind]] of Object.entries(PLAN_OPTIONS)) {
    const text = values[option];
    if (typeof text !== 'string') continue;
    if (kind === 'yes|no') {
      if (text !== 'yes' && text !== 'no') throw new UsageError(`--${option} must be yes or no, not "${text}"`);
      limits[field] = text === 'yes';
    } else if (kind === 'priority') {
      // 0 is allowed (the lowest); the upper bound is checked with the other limits.
      if (!/^\d+$/.test(text)) throw new UsageError(`--${option} must be a whole number from 0, not "${text}"`);
      limits[field] = Number(text);
    } else {
      const n =
        kind === 'count' ? (/^\d+$/.test(text) ? Number(text) : NaN) : /^\d+(\.\d+)?$/.test(text) ? Math.round(Number(text) * GB) : NaN;
      if (!(n >= 1))
        throw new UsageError(`--${option} must be a positive ${kind === 'count' ? 'whole number' : 'number of GB'}, not "${text}"`);
      limits[field] = n;
    }
  }
  return limits;
}

function planLine(p: Plan): string {
  return [
    p.name,
    `max vCPUs ${p.maxVcpus}`,
    `max run ${p.maxCommandRunSeconds} s`,
    `requests/min ${p.requestsPerMinute}`,
    `storage ${p.storageQuotaBytes / GB} GB`,
    `processing ${p.processingQuotaBytesPerMonth / GB} GB/month`,
    `private files ${p.privateFiles ? 'yes' : 'no'}`,
    `priority ${p.priority}`,
  ].join('\t');
}

/** From a shell: directly, or through the running service when it holds the embedded database. */
async function main(argv: string[]): Promise<number> {
  const print = (line: string) => console.log(line);
  try {
    return await runCli(argv, print);
  } catch (err) {
    if (!/is in use by process/.test((err as Error).message)) throw err;
    return runThroughAdminSocket(adminSocketPath(loadConfig().dataDir), argv, print);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`error: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}
