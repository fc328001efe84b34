// Test kit: a caller as the gate hands it to routes, without a database (for doubles of AccountsRepo).
import type { Caller } from '../../core/accounts/accounts-repo.ts';

export function testCaller(requestsPerMinute: number, keyId = 'k1'): Caller {
  return {
    account: {
      id: 'a1',
      name: 'test',
      plan: {
        name: 'test',
        maxVcpus: 8,
        maxCommandRunSeconds: 3600,
        privateFiles: false,
        storageQuotaBytes: 1e9,
        processingQuotaBytesPerMonth: 1e9,
        requestsPerMinute,
        priority: 0,
      },
    },
    environment: 'main',
    keyId,
  };
}
