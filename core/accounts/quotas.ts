// Storage and processing quotas by plan. A request that would go past one answers 403 naming it.
import type { Account } from './accounts-repo.ts';
import type { FilesRepo } from '../files/files-repo.ts';

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

  /** A new command: this month's processing quota must have room, and storage for its outputs. One read. */
  async checkNewCommand(account: Account): Promise<void> {
    const usage = await this.files.usage(account.id, this.monthStart());
    this.refuseProcessing(account, usage.processedBytes);
    this.refuseStorage(account, usage.storedBytes, 0);
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
