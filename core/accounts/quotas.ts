// Storage and processing quotas by plan. A request that would go past one answers 403 naming it.
import type { Account } from './accounts-repo.ts';
import type { FilesRepo } from '../files/files-repo.ts';
import { QuotaUsedUp, type NewCommandQuotas } from '../commands/commands-repo.ts';

import { PlanRefusal } from './plan-refusal.ts';

const GB = 1_000_000_000;
const gb = (bytes: number) => `${(bytes / GB).toFixed(3)} GB`;

export class Quotas {
  private readonly files: FilesRepo;
  private readonly clock: () => Date;
  constructor(files: FilesRepo, clock: () => Date) {
    this.files = files;
    this.clock = clock;
  }

  /** Refuses when the account's stored bytes plus `extraBytes` would exceed its storage quota. */
  async checkStorage(account: Account, extraBytes = 0): Promise<void> {
    this.refuseStorage(account, await this.files.storageUsedBytes(account.id), extraBytes);
  }

  /**
   * Stores a new command through `insert` (CommandsRepo.insert) if this month's processing quota has
   * room, and storage for its outputs: checked by the statement that stores it, so a submit makes one
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
      if (err instanceof QuotaUsedUp) {
        this.refuseProcessing(account, err.usage.processedBytes);
        this.refuseStorage(account, err.usage.storedBytes, 0);
      }
      throw err;
    }
  }

  private refuseStorage(account: Account, used: number, extraBytes: number): void {
    const quota = account.plan.storageQuotaBytes;
    if (used + extraBytes > quota || (extraBytes === 0 && used >= quota)) {
      throw new PlanRefusal(
        `storage quota exceeded: ${gb(used)} used${extraBytes ? ` + ${gb(extraBytes)} requested` : ''} of ${gb(quota)} ` +
          `on your plan (${account.plan.name}); delete files to make room`,
      );
    }
  }

  /** Refuses new commands once this month's processed bytes reach the processing quota. */
  private refuseProcessing(account: Account, used: number): void {
    const quota = account.plan.processingQuotaBytesPerMonth;
    if (used >= quota) {
      throw new PlanRefusal(
        `processing quota exceeded: ${gb(used)} processed this month of ${gb(quota)} on your plan (${account.plan.name})`,
      );
    }
  }

  private monthStart(): Date {
    const now = this.clock();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  }
}
