// Test kit: a stored output file of a command, as the reconciler records it; `overrides` changes any field.
import { randomUUID } from 'node:crypto';
import type { Caller } from '../../accounts/accounts-repo.ts';
import { FileStatus, StoreType } from '../file-status.ts';
import type { NewFileRow } from '../files-repo.ts';

export function testOutputRow(caller: Caller, commandId: string, overrides: Partial<NewFileRow> = {}): NewFileRow {
  return {
    id: randomUUID(),
    accountId: caller.account.id,
    environmentName: 'main',
    commandId,
    alias: 'out_1',
    serviceStoreType: StoreType.OUTPUT,
    status: FileStatus.STORED,
    storageKey: `k/${randomUUID()}`,
    fileName: 'o.mp4',
    isPrivate: false,
    ...overrides,
  };
}
