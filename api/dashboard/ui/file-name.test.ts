import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uploadName } from './file-name.ts';

test('a name the API accepts is kept as it is', () => {
  assert.equal(uploadName('clip_01-final.mp4'), 'clip_01-final.mp4');
});

test('spaces, accents and other characters become underscores or plain letters', () => {
  assert.equal(uploadName('my vidéo (1).mov'), 'my_video__1_.mov');
  assert.equal(uploadName('../../etc/passwd'), '.._.._etc_passwd');
  assert.equal(uploadName('<img src=x onerror=alert(1)>.png'), '_img_src_x_onerror_alert_1__.png');
});

test('a long name is cut to 255 characters and keeps its extension', () => {
  const name = uploadName(`${'a'.repeat(300)}.webm`);
  assert.equal(name.length, 255);
  assert.ok(name.endsWith('a.webm'));
});

test('an empty name, or one of dots only, becomes "file"', () => {
  assert.equal(uploadName(''), 'file');
  assert.equal(uploadName('..'), 'file');
  assert.equal(uploadName('.'), 'file');
});
