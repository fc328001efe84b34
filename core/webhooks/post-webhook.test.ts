// One webhook attempt against real HTTP servers on 127.0.0.1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { test, type TestContext } from 'node:test';
import { createAddressPolicy } from '../net/address-policy.ts';
import { EXCERPT_CHARS, excerpt, postWebhook } from './post-webhook.ts';
import { httpReceiver, type HttpReceiver } from './testing/http-receiver.ts';

const receiver = (t: TestContext, answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) =>
  httpReceiver(t, (req, res) => answer(req, res));
type Receiver = HttpReceiver;

const allowing = (r: Receiver) => ({ policy: createAddressPolicy([`127.0.0.1:${r.port}`]), timeoutMs: 10_000 });
const body = '{"data":{"message":"hi"},"timestamp":1}';
const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,abc' };

test('a 2xx is a delivery: the body and the signature headers arrive as JSON', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(204).end());
  const outcome = await postWebhook(`${r.url}/hooks?token=x`, body, headers, allowing(r));
  assert.deepEqual(outcome, { statusCode: 204, error: null });
  assert.equal(r.requests.length, 1);
  const [got] = r.requests;
  assert.equal(got.url, '/hooks?token=x');
  assert.equal(got.body, body);
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.headers['webhook-id'], 'msg_1');
  assert.equal(got.headers['webhook-signature'], 'v1,abc');
});

test('another status fails the attempt and quotes the start of the answer, never the query string', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(500).end('database\nis down ' + 'x'.repeat(1000)));
  const outcome = await postWebhook(`${r.url}/hooks?token=secret`, body, headers, allowing(r));
  assert.equal(outcome.statusCode, 500);
  assert.match(outcome.error ?? '', /^POST http:\/\/127\.0\.0\.1:\d+\/hooks answered HTTP 500: database is down x+$/);
  assert.ok(outcome.error!.length < 300, outcome.error!);
  assert.doesNotMatch(outcome.error!, /secret/);
});

test('attack: a receiver answer with terminal escapes, bidi overrides and line breaks is kept as a short printable excerpt', async (t) => {
  const hostile = '\u001b[2J\u001b[31mERROR\u001b[0m\r\nX-Injected: 1\u202egnp.exe\u200b\u0000' + 'é'.repeat(500) + '😀'.repeat(200);
  const r = await receiver(t, (_req, res) => res.writeHead(502).end(hostile));
  const outcome = await postWebhook(`${r.url}/hooks`, body, headers, allowing(r));
  const quoted = outcome.error!.replace(/^POST \S+ answered HTTP 502: /, '');
  assert.ok([...quoted].length <= EXCERPT_CHARS, `${[...quoted].length} characters kept`);
  assert.doesNotMatch(quoted, /[\p{C}\n\r]/u, 'a control, format or unassigned character was kept');
  assert.ok(quoted.startsWith('[2J [31mERROR [0m X-Injected: 1 gnp.exe éé'), quoted);
  assert.equal([...quoted].length, EXCERPT_CHARS);
});

test('excerpt: at most 100 printable characters on one line, never half a character', () => {
  assert.equal(excerpt('  line one\n\tline two\u0007  '), 'line one line two');
  assert.equal(excerpt('a\u202eb\u200bc\ufeffd\u2028e'), 'a b c d e');
  assert.equal(excerpt('😀'.repeat(150)), '😀'.repeat(100));
  assert.equal(excerpt('x'.repeat(99) + ' y'), 'x'.repeat(99));
  assert.equal(excerpt(''), '');
});

test('a redirect is not followed', async (t) => {
  const r = await receiver(t, (req, res) => res.writeHead(302, { location: req.url === '/a' ? '/b' : '/c' }).end());
  const outcome = await postWebhook(`${r.url}/a`, body, headers, allowing(r));
  assert.equal(outcome.statusCode, 302);
  assert.match(outcome.error ?? '', /redirects are not followed/);
  assert.deepEqual(
    r.requests.map((q) => q.url),
    ['/a'],
  );
});

test('at most a few KB of an answer are read: a huge body is cut off', async (t) => {
  let written = 0;
  let finished = false;
  let onClose = () => {};
  const closed = new Promise<void>((resolve) => (onClose = resolve));
  const r = await receiver(t, (_req, res) => {
    res.writeHead(500);
    res.on('close', () => onClose());
    const chunk = Buffer.alloc(64 * 1024, 'y');
    const more = () => {
      while (!res.destroyed && written < 256 * 1024 * 1024) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end(() => (finished = true));
    };
    more();
  });
  const outcome = await postWebhook(r.url, body, headers, allowing(r));
  assert.equal(outcome.statusCode, 500);
  await closed;
  assert.equal(finished, false, `the whole answer (${written} bytes) was read`);
});

test('no answer within the deadline is a timeout', async (t) => {
  const r = await receiver(t, () => {}); // never answers
  const outcome = await postWebhook(r.url, body, headers, { ...allowing(r), timeoutMs: 200 });
  assert.deepEqual(outcome, { statusCode: null, error: `POST ${r.url}/ timed out after 200 ms` });
});

test('a peer that never completes the connection costs the connect deadline, not the attempt deadline', async (t) => {
  // A listener in a stopped process: the kernel queues `backlog` connections, then drops further SYNs.
  const child = spawn(process.execPath, [
    '-e',
    "const s = require('net').createServer(); s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => console.log(s.address().port));",
  ]);
  t.after(() => child.kill('SIGKILL'));
  const port = Number(await new Promise<string>((resolve) => child.stdout.once('data', (b: Buffer) => resolve(b.toString()))));
  child.kill('SIGSTOP');
  const fillers: net.Socket[] = [];
  t.after(() => fillers.forEach((s) => s.destroy()));
  // Fill the queue: connections complete until it is full; the first that does not is left waiting.
  for (;;) {
    const socket = net.connect(port, '127.0.0.1');
    fillers.push(socket);
    const connected = await Promise.race([
      new Promise<boolean>((resolve) => socket.once('connect', () => resolve(true))),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000)),
    ]);
    if (!connected) break;
  }
  const outcome = await postWebhook(`http://127.0.0.1:${port}/hooks`, body, headers, {
    policy: createAddressPolicy([`127.0.0.1:${port}`]),
    timeoutMs: 60_000,
    connectTimeoutMs: 200,
  });
  assert.deepEqual(outcome, { statusCode: null, error: `POST http://127.0.0.1:${port}/hooks timed out: no connection after 200 ms` });
});

test('a refused connection is a failed attempt naming the cause', async (t) => {
  const free = net.createServer();
  await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
  const { port } = free.address() as net.AddressInfo;
  await new Promise<void>((r) => free.close(() => r()));
  const outcome = await postWebhook(`http://127.0.0.1:${port}/`, body, headers, {
    policy: createAddressPolicy([`127.0.0.1:${port}`]),
    timeoutMs: 5000,
  });
  assert.equal(outcome.statusCode, null);
  assert.match(outcome.error ?? '', /ECONNREFUSED/);
  t.diagnostic(outcome.error!);
});

test('attack: loopback as a literal or behind a name is refused without a connection (SSRF guard)', async (t) => {
  const r = await receiver(t, (_req, res) => res.writeHead(200).end());
  const policy = createAddressPolicy([]);
  for (const url of [`${r.url}/x`, `http://localhost:${r.port}/x`, `http://[::ffff:127.0.0.1]:${r.port}/x`]) {
    const outcome = await postWebhook(url, body, headers, { policy, timeoutMs: 5000 });
    assert.equal(outcome.statusCode, null, url);
    assert.match(outcome.error ?? '', /refused: .*(127\.0\.0\.1|::1|::ffff:7f00:1).*not a public address/, url);
  }
  assert.equal(r.connections(), 0);
});

test('stopping cuts an attempt short: it rejects with the reason', async (t) => {
  const r = await receiver(t, () => {});
  const stop = new AbortController();
  const attempt = postWebhook(r.url, body, headers, { ...allowing(r), signal: stop.signal });
  while (r.requests.length === 0) await new Promise((res) => setTimeout(res, 10));
  stop.abort(new Error('stopping'));
  await assert.rejects(attempt, /stopping/);
});
