// `npm run cli -- <command>`: manage accounts and API keys in the service's database.
import { parseArgs } from 'node:util';
import { AccountsRepo } from '../core/accounts/accounts-repo.ts';
import { PLANS } from '../core/accounts/plans.ts';
import { loadConfig } from '../core/config.ts';
import { openDatabase, type Database } from '../core/db/database.ts';
import { adminSocketPath, runThroughAdminSocket } from './admin-socket.ts';

const USAGE = `usage: npm run cli -- <command>
  accounts create <name> [--plan free|pro]     create an account (default plan: free)
  accounts list                                list accounts with their plans
  accounts set-plan <name> <plan>              change an account's plan
  keys create <account> [--env main] [--label text]   create an API key (printed once)
  keys list <account>                          list an account's keys (ids only)
  keys revoke <key-id | full key>              revoke a key
  plans                                        list plans and what they allow
The database is the service's (FFOP_DATA_DIR / FFOP_DATABASE_URL, as for the service). While the
embedded service runs (PGlite allows one process), the command goes through its admin socket.`;

/** Runs one CLI command. With `database` (the running service's admin socket) that database is used. */
export async function runCli(argv: string[], out: (line: string) => void, opts: { database?: Database } = {}): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { plan: { type: 'string' }, env: { type: 'string' }, label: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [group, action, ...rest] = positionals;
  if (values.help || !group) {
    out(USAGE);
    return group ? 0 : 2;
  }
  if (group === 'plans') {
    for (const p of Object.values(PLANS)) {
      out(`${p.name}\tmax vCPUs ${p.maxVcpus}\tmax run ${p.maxCommandRunSeconds} s\tprivate files ${p.privateFiles ? 'yes' : 'no'}`);
    }
    return 0;
  }
  const database = opts.database ?? (await openDatabase(loadConfig().databaseUrl));
  try {
    const accounts = new AccountsRepo(database.db);
    const account = async (name: string | undefined) => {
      if (!name) throw new UsageError('missing account name');
      const found = await accounts.findAccountByName(name);
      if (!found) throw new UsageError(`no account named "${name}"`);
      return found;
    };
    switch (`${group} ${action}`) {
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
      default:
        throw new UsageError(`unknown command "${positionals.join(' ')}"`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as Error).message.startsWith('unknown plan') || (err as Error).message.startsWith('environment')) {
      out(`error: ${(err as Error).message}`);
      return 2;
    }
    throw err;
  } finally {
    if (!opts.database) await database.close();
  }
}

class UsageError extends Error {}

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
