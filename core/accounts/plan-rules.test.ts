// The plan's rules as the code decides them, with the words users see (the e2e tests match them too).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PlanRefusal } from './plan-refusal.ts';
import {
  checkPrivateFiles,
  checkRunSeconds,
  checkStorage,
  checkVcpus,
  fileOverStorageQuota,
  Limit,
  newCommandRefusal,
  vcpusOverPlanNow,
} from './plan-rules.ts';

const plan = {
  name: 'small',
  maxVcpus: 4,
  maxCommandRunSeconds: 600,
  privateFiles: false,
  storageQuotaBytes: 1000,
  processingQuotaBytesPerMonth: 5000,
};

/** The message of the PlanRefusal `check` throws, or null when it allows. */
function refusal(check: () => void): string | null {
  try {
    check();
    return null;
  } catch (err) {
    assert.ok(err instanceof PlanRefusal);
    return err.message;
  }
}

test('a Limit compares as written: atMost allows the limit itself, below does not', () => {
  assert.deepEqual(
    [3, 4, 5].map((n) => Limit.atMost.allows(n, 4)),
    [true, true, false],
  );
  assert.deepEqual(
    [3, 4, 5].map((n) => Limit.below.allows(n, 4)),
    [true, false, false],
  );
});

test('vCPUs: a submit may ask the plan maximum, not more; the queue words a lowered plan', () => {
  assert.equal(
    refusal(() => checkVcpus(plan, 4)),
    null,
  );
  assert.equal(
    refusal(() => checkVcpus(plan, 5)),
    'vcpu_count 5 exceeds the maximum of 4 vCPUs of your plan (small)',
  );
  assert.equal(vcpusOverPlanNow(2, 1), "vcpu_count 2 is more than the 1 vCPUs the account's plan allows now");
});

test('run time and private files', () => {
  assert.equal(
    refusal(() => checkRunSeconds(plan, 600)),
    null,
  );
  assert.equal(
    refusal(() => checkRunSeconds(plan, 601)),
    'max_command_run_seconds 601 exceeds the maximum of 600 s of your plan (small)',
  );
  assert.equal(
    refusal(() => checkPrivateFiles(plan, false)),
    null,
  );
  assert.equal(
    refusal(() => checkPrivateFiles(plan, true)),
    'private files (is_private) are not available on your plan (small)',
  );
  assert.equal(
    refusal(() => checkPrivateFiles({ ...plan, privateFiles: true }, true)),
    null,
  );
});

test('storage: something new needs the account below its quota, and a known size must fit', () => {
  assert.equal(
    refusal(() => checkStorage(plan, 999)),
    null,
  );
  assert.equal(
    refusal(() => checkStorage(plan, 1000)),
    'storage quota exceeded: 0.000 GB used of 0.000 GB on your plan (small); delete files to make room',
  );
  assert.equal(
    refusal(() => checkStorage(plan, 600, 400)),
    null,
  );
  assert.match(
    refusal(() => checkStorage(plan, 600, 401))!,
    /^storage quota exceeded: 0\.000 GB used \+ 0\.000 GB requested of /,
  );
  // An empty upload adds nothing, but at the quota nothing new is stored.
  assert.match(
    refusal(() => checkStorage(plan, 1000, 0))!,
    /^storage quota exceeded: 0\.000 GB used of 0\.000 GB/,
  );
  // A file fetched from a URL is counted by its size once downloaded.
  assert.equal(fileOverStorageQuota(plan, 600, 400), null);
  assert.equal(fileOverStorageQuota(plan, 600, 401), 'the file (401 bytes) would exceed the storage quota of your plan (small)');
});

test("a new command's refusal names the quota the statement found used up, processing first", () => {
  const usage = { storedBytes: 2_500_000_000, processedBytes: 7_000_000_000 };
  const big = { ...plan, storageQuotaBytes: 2_000_000_000, processingQuotaBytesPerMonth: 6_000_000_000 };
  assert.equal(
    newCommandRefusal(big, { processingRoom: false, storageRoom: false, usage }).message,
    'processing quota exceeded: 7.000 GB processed this month of 6.000 GB on your plan (small)',
  );
  assert.equal(
    newCommandRefusal(big, { processingRoom: true, storageRoom: false, usage }).message,
    'storage quota exceeded: 2.500 GB used of 2.000 GB on your plan (small); delete files to make room',
  );
});
