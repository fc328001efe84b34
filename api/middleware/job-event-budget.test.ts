import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobEventBudget } from './job-event-budget.ts';

test('a Job may make its burst at once, then perSecond; each Job has its own budget', () => {
  let now = 0;
  const budget = new JobEventBudget({ burst: 3, perSecond: 2, now: () => now });
  assert.deepEqual(
    [1, 2, 3].map(() => budget.take('a')),
    [null, null, null],
  );
  assert.equal(budget.take('a'), 1, 'the fourth waits a second');
  assert.equal(budget.take('b'), null, 'another Job is not held up');
  now += 500; // one request's worth
  assert.equal(budget.take('a'), null);
  assert.equal(budget.take('a'), 1);
});

test('the wait it asks for is long enough to be let through', () => {
  let now = 0;
  const budget = new JobEventBudget({ burst: 1, perSecond: 0.25, now: () => now });
  assert.equal(budget.take('a'), null);
  const wait = budget.take('a')!;
  assert.equal(wait, 4);
  now += wait * 1000;
  assert.equal(budget.take('a'), null);
});

test('Jobs idle long enough to be full again are forgotten, a few per request', () => {
  let now = 0;
  const budget = new JobEventBudget({ burst: 2, perSecond: 2, now: () => now });
  for (let i = 0; i < 1000; i++) budget.take(`job-${i}`);
  assert.equal(budget.size, 1000);
  now += 1000; // a full refill
  for (let i = 0; i < 600; i++) budget.take('busy');
  assert.equal(budget.size, 1, 'only the Job still reporting is left');
});
