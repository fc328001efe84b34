import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MultipartConflict } from './storage.ts';
import { UploadActivity } from './upload-activity.ts';

test('parts of one upload are written side by side, but one part by one request at a time', () => {
  const activity = new UploadActivity();
  const done1 = activity.beginPart('u', 1);
  const done2 = activity.beginPart('u', 2);
  assert.throws(() => activity.beginPart('u', 1), { name: 'MultipartConflict', message: /part 1 is being uploaded by another request/ });
  const other = activity.beginPart('v', 1); // another upload's part 1
  done1();
  activity.beginPart('u', 1)();
  done2();
  other();
  assert.equal(activity.size, 0, 'nothing is kept once idle');
});

test('completion waits for no part in flight, and no part starts while it runs', () => {
  const activity = new UploadActivity();
  const part = activity.beginPart('u', 3);
  assert.throws(() => activity.beginCompletion('u'), { message: /part 3 is still being uploaded/ });
  part();
  const completion = activity.beginCompletion('u');
  assert.throws(
    () => activity.beginPart('u', 1),
    (err) => err instanceof MultipartConflict && /being completed/.test(err.message),
  );
  assert.throws(() => activity.beginCompletion('u'), { message: /being completed by another request/ });
  completion();
  activity.beginPart('u', 1)();
  assert.equal(activity.size, 0);
});
