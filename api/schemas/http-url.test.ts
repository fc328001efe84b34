// The document's URL pattern promises forms the WHATWG parser accepts: check that promise on its edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HTTP_URL_PATTERN, isHttpUrl } from './http-url.ts';

const pattern = new RegExp(HTTP_URL_PATTERN);

test('URLs of the documented form are accepted', () => {
  for (const url of [
    'https://example.com/media/video.mp4',
    'HTTP://A.B_C.d-e.:65535?x=1#y',
    'http://127.0.0.1:8080/a b/é.mp4',
    'http://255.255.255.255/',
    'http://0.0.0.0:0',
    'http://alice:hunter2@host_1/a.mp4',
    'http://a.1b2.c3/',
    'https://localhost#',
    'http://x:6553',
  ]) {
    assert.match(url, pattern, url);
    assert.ok(isHttpUrl(url), url);
  }
});

test('URLs the parser refuses are outside the documented form', () => {
  for (const url of [
    'HTTP://',
    'http://a:65536/',
    'http://a.123/',
    'http://1.2.3.999/',
    'http://1.2.3.4.5/',
    'http://xn--abc/',
    'http://a b/',
    'http://:80/',
    'http://@/',
    'ftp://example.com/a.mp4',
  ]) {
    assert.equal(isHttpUrl(url), false, url);
    assert.doesNotMatch(url, pattern, url);
  }
});
