// `npm run cli -- webhook ...`: the CLI side of the webhook endpoints, for an account and environment.
import type { Account } from '../../core/accounts/accounts-repo.ts';
import type { Db } from '../../core/db/database.ts';
import { createAddressPolicy } from '../../core/net/address-policy.ts';
import { webhookUrlProblem } from '../../core/webhooks/webhook-url.ts';
import { WebhooksRepo } from '../../core/webhooks/webhooks-repo.ts';
import { deliveryRecord } from './serialize.ts';

export const WEBHOOK_USAGE = `  webhook set <account> --url URL [--env main] [--rotate-secret]
                                               set the environment's webhook (prints a new secret once)
  webhook show <account> [--env main]          the webhook's URL (the secret is never shown again)
  webhook delete <account> [--env main]        remove it (its pending deliveries end FAILED)
  webhook test <account> [--env main]          queue a test delivery
  webhook deliveries <account> [--env main] [--limit 20]   the delivery log, newest first`;

/** A mistake on the command line: exit code 2 with the message. */
export class WebhookUsageError extends Error {}

export interface WebhookCliInput {
  action: string;
  account: Account;
  environment: string;
  url?: string;
  rotateSecret: boolean;
  limit?: string;
  /** FFOP_ALLOW_ADDRESSES, as the API checks URLs. */
  allowAddresses: string[];
}

export async function runWebhookCli(db: Db, i: WebhookCliInput, out: (line: string) => void): Promise<number> {
  const repo = new WebhooksRepo(db);
  const where = `account ${i.account.name}, environment ${i.environment}`;
  const none = () => new WebhookUsageError(`no webhook is set for ${where}`);
  switch (i.action) {
    case 'set': {
      if (!i.url) throw new WebhookUsageError('webhook set needs --url');
      const problem = webhookUrlProblem(i.url, createAddressPolicy(i.allowAddresses));
      if (problem) throw new WebhookUsageError(`--url: ${problem}`);
      const { row, newSecret } = await repo.set(i.account.id, i.environment, i.url, i.rotateSecret, new Date());
      out(`webhook of ${where}: ${row.url}`);
      out(newSecret ? `secret: ${newSecret} (shown once: keep it to verify signatures)` : 'secret: unchanged');
      return 0;
    }
    case 'show': {
      const row = await repo.find(i.account.id, i.environment);
      if (!row) throw none();
      out(`${row.url}\t${row.environmentName}\tcreated ${row.createdAt.toISOString()}\tupdated ${row.updatedAt.toISOString()}`);
      return 0;
    }
    case 'delete':
      if (!(await repo.delete(i.account.id, i.environment, new Date()))) throw none();
      out(`removed the webhook of ${where}`);
      return 0;
    case 'test': {
      const queued = await repo.addTestDelivery(i.account.id, i.environment);
      if (!queued) throw none();
      if (!('id' in queued))
        throw new WebhookUsageError(`too many test deliveries: ${queued.reason}; retry after ${queued.retryAfterSeconds} s`);
      out(`queued test delivery ${queued.id}`);
      return 0;
    }
    case 'deliveries': {
      const limit = i.limit === undefined ? 20 : /^\d+$/.test(i.limit) ? Number(i.limit) : NaN;
      if (!(limit >= 1 && limit <= 1000)) throw new WebhookUsageError(`--limit must be a whole number from 1 to 1000, not "${i.limit}"`);
      for (const row of await repo.listDeliveries(i.account.id, i.environment, limit, 0)) out(deliveryLine(deliveryRecord(row)));
      return 0;
    }
    default:
      throw new WebhookUsageError(`unknown command "webhook ${i.action}"`);
  }
}

function deliveryLine(d: ReturnType<typeof deliveryRecord>): string {
  const last = d.attempts.at(-1);
  return [
    d.delivery_id,
    d.event_type,
    d.subject_id ?? '-',
    d.status,
    `attempts ${d.attempt_count}`,
    last ? `last ${last.status_code ?? '-'} ${last.error ?? 'ok'}` : 'last -',
    `next ${d.next_attempt_at ?? '-'}`,
    `created ${d.created_at}`,
  ].join('\t');
}
