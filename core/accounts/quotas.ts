// Storage and processing quotas by plan, as the API checks them: the rules and the words of their
// refusals are in plan-rules.ts. A request that would go past one answers 403 naming it.
import type { Account } from './accounts-repo.ts';
import type { FilesRepo } from '../files/files-repo.ts';
import { QuotaUsedUp, type NewCommandQuotas } from '../commands/commands-repo.ts';
import { checkStorage, newCommandRefusal } from './plan-rules.ts';

export class Quotas {
  private readonly files: FilesRepo;
  private readonly clock: () => Date;
  constructor(files: FilesRepo, clock: () => Date) {
    this.files = files;
    this.clock = clock;
  }

  /** Refuses a new file of `sizeBytes` (undefined: not known yet) the account's storage quota has no room for. */
  async checkStorage(account: Account, sizeBytes?: number): Promise<void> {
    checkStorage(account.plan, await this.files.storageUsedBytes(account.id), sizeBytes);
  }

  /**
   * Stores a new command through `insert` (CommandsRepo.insert) if this month's processing quota has
   * room, and storage for its outputs: decided by the statement that stores it, so a submit makes one
   * round trip. Refused, nothing is stored and the refusal names the quota.
   */
  async storeNewCommand(account: Account, insert: (quotas: NewCommandQuotas) => Promise<void>): Promise<void> {
    const quotas: NewCommandQuotas = {
      accountId: account.id,
      month: this.monthStart().toISOString().slice(0, 10),
      storageQuotaBytes: account.plan.storageQuotaBytes,
      processingQuotaBytesPerMonth: account.plan.processingQuotaBytesPerMonth,
    };
    try {
      await insert(quotas);
    } catch (err) {
      if (err instanceof QuotaUsedUp) throw newCommandRefusal(account.plan, err.room);
      throw err;
    }
  }

  private monthStart(): Date {
    const now = this.clock();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  }
}
