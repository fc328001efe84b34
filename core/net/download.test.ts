import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ErrorStatus } from '../commands/error-status.ts';
import { createAddressPolicy } from './address-policy.ts';
import type { AddressPolicy } from './address-policy.ts';
import { DownloadError, downloadToFile, refusedBeforeConnecting } from './download.ts';
import { freePort } from './testing/free-port.ts';
import { fileNameFromUrl, safeLocalName } from './file-name.ts';

const run = promisify(execFile);
const BODY = Buffer.from('not really a video, but bytes all the same\n'.repeat(50));

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'download-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface TestServer {
  port: number;
  /** request paths (with query) in arrival order */
  hits: string[];
  connections: () => number;
}

async function listen(t: TestContext, server: http.Server | https.Server | net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

async function startServer(t: TestContext, handler: http.RequestListener): Promise<TestServer> {
  const hits: string[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  server.on('connection', () => connections++);
  const port = await listen(t, server);
  return { port, hits, connections: () => connections };
}

function serveBody(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': BODY.length });
  res.end(BODY);
}

async function expectDownloadError(promise: Promise<unknown>, status: ErrorStatus, message?: RegExp): Promise<DownloadError> {
  let caught: unknown;
  await assert.rejects(promise, (error) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof DownloadError, `expected a DownloadError, got ${String(caught)}`);
  assert.equal(caught.errorStatus, status, caught.message);
  if (message) assert.match(caught.message, message);
  return caught;
}

const loopback = (port: number, rest = '/a.mp4') => `http://127.0.0.1:${port}${rest}`;
const inFile = (dir: string) => path.join(dir, 'in.mp4');
const noAllow = createAddressPolicy([]);
const loopbackRange = createAddressPolicy(['127.0.0.0/8']);

const baseOptions = (policy: AddressPolicy | null, extra: Partial<Parameters<typeof downloadToFile>[2]> = {}) => ({
  maxBytes: 1_000_000,
  timeoutMs: 10_000,
  policy,
  ...extra,
});

// Both ways of writing a body: through a write stream (the service) and as it arrives (the runner).
for (const syncWrites of [false, true]) {
  describe(`downloadToFile${syncWrites ? ', bodies written as they arrive (syncWrites)' : ''}`, () => {
    const options = (policy: AddressPolicy | null, extra: Partial<Parameters<typeof downloadToFile>[2]> = {}) =>
      baseOptions(policy, { syncWrites, ...extra });

    test('downloads when a host:port entry allows the loopback server', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const dest = inFile(dir);
      const url = `http://127.0.0.1:${server.port}/media/clip.mp4?sig=abc`;
      const result = await downloadToFile(url, dest, options(createAddressPolicy([`127.0.0.1:${server.port}`])));
      assert.deepEqual(result, { bytes: BODY.length, contentType: 'video/mp4', finalUrl: url });
      assert.deepEqual(await readFile(dest), BODY);
      assert.deepEqual(await readdir(dir), ['in.mp4']);
      assert.deepEqual(server.hits, ['/media/clip.mp4?sig=abc']);
    });

    test('downloads when a CIDR entry allows the loopback server', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const dest = inFile(dir);
      await downloadToFile(loopback(server.port), dest, options(loopbackRange));
      assert.deepEqual(await readFile(dest), BODY);
    });

    test('a trusted URL (no policy) is fetched without address checks', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const dest = inFile(dir);
      await downloadToFile(loopback(server.port), dest, options(null));
      assert.deepEqual(await readFile(dest), BODY);
    });

    test('an unlisted 127.0.0.1 literal is refused before connecting', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(noAllow));
      await expectDownloadError(promise, ErrorStatus.FORBIDDEN_INPUT_ADDRESS, /127\.0\.0\.1/);
      assert.equal(server.connections(), 0);
      assert.deepEqual(await readdir(dir), []);
    });

    test('an IPv4-mapped IPv6 literal of loopback is refused', async (t) => {
      const dir = await tempDir(t);
      const promise = downloadToFile('http://[::ffff:127.0.0.1]:1/a.mp4', inFile(dir), options(noAllow));
      await expectDownloadError(promise, ErrorStatus.FORBIDDEN_INPUT_ADDRESS);
    });

    test('the name localhost is refused after resolving it', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const promise = downloadToFile(`http://localhost:${server.port}/a.mp4`, inFile(dir), options(noAllow));
      await expectDownloadError(promise, ErrorStatus.FORBIDDEN_INPUT_ADDRESS, /localhost resolves to (127\.0\.0\.1|::1)/);
      assert.equal(server.connections(), 0);
    });

    test('the connected peer address is checked before any byte is sent', async (t) => {
      const dir = await tempDir(t);
      let received = 0;
      let markClosed!: () => void;
      const peerClosed = new Promise<void>((resolve) => (markClosed = resolve));
      const server = net.createServer((socket) => {
        socket.on('data', (chunk) => (received += chunk.length));
        socket.on('close', () => markClosed());
      });
      const serverPort = await listen(t, server);
      // Allows the pre-connect check, refuses the check on the live socket.
      const calls: string[] = [];
      const policy: AddressPolicy = {
        isAllowed(ip) {
          calls.push(ip);
          return calls.length === 1;
        },
      };
      const promise = downloadToFile(loopback(serverPort), inFile(dir), options(policy));
      await expectDownloadError(promise, ErrorStatus.FORBIDDEN_INPUT_ADDRESS, /connected to 127\.0\.0\.1/);
      await peerClosed; // the connection was made, and closed by the client
      assert.equal(received, 0);
      assert.deepEqual(calls, ['127.0.0.1', '127.0.0.1']);
    });

    test('follows an allowed redirect and reports the final URL', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (req, res) => {
        if (req.url === '/old.mp4') {
          res.writeHead(302, { location: '/new.mp4?x=1' }).end();
        } else {
          serveBody(req, res);
        }
      });
      const dest = inFile(dir);
      const result = await downloadToFile(loopback(server.port, '/old.mp4'), dest, options(loopbackRange));
      assert.equal(result.finalUrl, `http://127.0.0.1:${server.port}/new.mp4?x=1`);
      assert.deepEqual(server.hits, ['/old.mp4', '/new.mp4?x=1']);
      assert.deepEqual(await readFile(dest), BODY);
    });

    test('a redirect from an allowed server to a non-allowed port is refused', async (t) => {
      const dir = await tempDir(t);
      const inside = await startServer(t, serveBody);
      const front = await startServer(t, (_req, res) => {
        res.writeHead(301, { location: `http://127.0.0.1:${inside.port}/secret.mp4` }).end();
      });
      const promise = downloadToFile(loopback(front.port), inFile(dir), options(createAddressPolicy([`127.0.0.1:${front.port}`])));
      await expectDownloadError(promise, ErrorStatus.FORBIDDEN_INPUT_ADDRESS, new RegExp(`:${inside.port}/secret\\.mp4`));
      assert.deepEqual(front.hits, ['/a.mp4']);
      assert.equal(inside.connections(), 0);
      assert.deepEqual(await readdir(dir), []);
    });

    test('a redirect to another scheme is refused', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /unsupported scheme "file:"/);
    });

    test('too many redirects is UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (req, res) => {
        res.writeHead(307, { location: `${req.url}x` }).end();
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { maxRedirects: 2 }));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /more than 2 times/);
      assert.equal(server.hits.length, 3);
    });

    test('HTTP 404 is UNREACHABLE, and the message leaves out the query string', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(404).end('nope');
      });
      const promise = downloadToFile(`http://127.0.0.1:${server.port}/x.mp4?X-Amz-Signature=SECRET#frag`, inFile(dir), options(null));
      const error = await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE);
      assert.equal(error.message, `GET http://127.0.0.1:${server.port}/x.mp4 answered HTTP 404`);
      assert.deepEqual(await readdir(dir), []);
    });

    test('a refused connection is UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      const port = await freePort();
      const promise = downloadToFile(loopback(port), inFile(dir), options(createAddressPolicy([`127.0.0.1:${port}`])));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /ECONNREFUSED/);
    });

    test('an unknown host name is UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      const promise = downloadToFile('http://no-such-host.invalid/a.mp4', inFile(dir), options(noAllow));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /no-such-host\.invalid/);
    });

    test('a body cut short of its Content-Length is UNREACHABLE and leaves no file', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200, { 'content-length': 1000 });
        res.write(Buffer.alloc(400));
        setImmediate(() => res.socket?.destroy());
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE);
      assert.deepEqual(await readdir(dir), []);
    });

    test('a declared Content-Length above the limit is INPUT_FILE_TOO_LARGE', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { maxBytes: BODY.length - 1 }));
      await expectDownloadError(promise, ErrorStatus.INPUT_FILE_TOO_LARGE, new RegExp(`${BODY.length} bytes`));
      assert.deepEqual(await readdir(dir), []);
    });

    test('a chunked body growing past the limit is INPUT_FILE_TOO_LARGE and leaves no file', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200); // no Content-Length: chunked
        for (let i = 0; i < 4; i++) res.write(Buffer.alloc(1000, i));
        res.end();
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { maxBytes: 2500 }));
      await expectDownloadError(promise, ErrorStatus.INPUT_FILE_TOO_LARGE);
      assert.deepEqual(await readdir(dir), []);
    });

    test('a chunked body of exactly the limit is accepted', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200);
        res.write(Buffer.alloc(1500, 1));
        res.end(Buffer.alloc(1000, 2));
      });
      const dest = inFile(dir);
      const result = await downloadToFile(loopback(server.port), dest, options(null, { maxBytes: 2500 }));
      assert.equal(result.bytes, 2500);
      assert.equal((await readFile(dest)).length, 2500);
    });

    test('a server that keeps trickling past the deadline times out as UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200);
        const timer = setInterval(() => res.write('x'), 20);
        res.on('close', () => clearInterval(timer));
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { timeoutMs: 300, idleTimeoutMs: 60_000 }));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /timed out after 300 ms/);
      assert.deepEqual(await readdir(dir), []);
    });

    test('a server that goes silent hits the idle timeout as UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200);
        res.write('first bytes, then nothing');
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { timeoutMs: 60_000, idleTimeoutMs: 200 }));
      await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /no data for 200 ms/);
      assert.deepEqual(await readdir(dir), []);
    });

    test("cancelling through opts.signal rejects with the signal's reason", async (t) => {
      const dir = await tempDir(t);
      const controller = new AbortController();
      const server = await startServer(t, (_req, res) => {
        res.writeHead(200);
        res.write('some');
        controller.abort(new Error('shutting down'));
      });
      const promise = downloadToFile(loopback(server.port), inFile(dir), options(null, { signal: controller.signal }));
      await assert.rejects(promise, /shutting down/);
      assert.deepEqual(await readdir(dir), []);
    });

    const otherSchemes = ['ftp://example.com/a.mp4', 'file:///etc/passwd', 'data:video/mp4,abc', 'gopher://h:70/x'];
    for (const url of otherSchemes) {
      test(`scheme of ${url} is refused as UNREACHABLE`, async (t) => {
        const dir = await tempDir(t);
        await expectDownloadError(
          downloadToFile(url, inFile(dir), options(noAllow)),
          ErrorStatus.UNREACHABLE_INPUT_FILE,
          /unsupported scheme/,
        );
      });
    }

    test('a URL that does not parse is UNREACHABLE', async (t) => {
      const dir = await tempDir(t);
      await expectDownloadError(
        downloadToFile('not a url', inFile(dir), options(null)),
        ErrorStatus.UNREACHABLE_INPUT_FILE,
        /not a valid URL/,
      );
    });

    test('credentials in the URL are refused without echoing them', async (t) => {
      const dir = await tempDir(t);
      const server = await startServer(t, serveBody);
      const promise = downloadToFile(`http://alice:hunter2@127.0.0.1:${server.port}/a.mp4`, inFile(dir), options(null));
      const error = await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /credentials/);
      assert.doesNotMatch(error.message, /hunter2|alice/);
      assert.equal(server.connections(), 0);
    });
  });
}

describe('refusedBeforeConnecting', () => {
  test('answers what downloadToFile refuses before opening anything, with the same error; null for the rest', async () => {
    const policy = createAddressPolicy([]);
    for (const url of ['http://127.0.0.1:9/a.mp4', 'ftp://example.com/a.mp4', 'http://user:pw@example.com/a.mp4', 'not a url']) {
      const early = refusedBeforeConnecting(url, policy);
      assert.ok(early, url);
      const late = await downloadToFile(url, '/nonexistent/in.mp4', baseOptions(policy)).catch((e: unknown) => e);
      assert.ok(late instanceof DownloadError);
      assert.deepEqual([early.errorStatus, early.message], [late.errorStatus, late.message], url);
    }
    // Names are resolved when connecting; trusted URLs (no policy) are not checked.
    assert.equal(refusedBeforeConnecting('http://localhost:9/a.mp4', policy), null);
    assert.equal(refusedBeforeConnecting('http://127.0.0.1:9/a.mp4', null), null);
  });
});

describe('downloadToFile over https', () => {
  async function startHttpsServer(t: TestContext, dir: string): Promise<{ port: number; certPath: string }> {
    const keyPath = path.join(dir, 'key.pem');
    const certPath = path.join(dir, 'cert.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '1',
      '-subj',
      '/CN=test',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const server = https.createServer({ key: await readFile(keyPath), cert: await readFile(certPath) }, serveBody);
    return { port: await listen(t, server), certPath };
  }

  test('an untrusted certificate is UNREACHABLE', async (t) => {
    const dir = await tempDir(t);
    const { port } = await startHttpsServer(t, dir);
    const promise = downloadToFile(`https://127.0.0.1:${port}/a.mp4`, inFile(dir), baseOptions(null));
    await expectDownloadError(promise, ErrorStatus.UNREACHABLE_INPUT_FILE, /certificate/i);
    assert.deepEqual((await readdir(dir)).sort(), ['cert.pem', 'key.pem']);
  });

  test('a trusted certificate for the IP literal downloads', async (t) => {
    const dir = await tempDir(t);
    const { port, certPath } = await startHttpsServer(t, dir);
    // Trusting a test CA needs NODE_EXTRA_CA_CERTS, which Node reads only at start: use a child process.
    const script = path.join(dir, 'fetch.mts');
    const downloadModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'download.ts');
    await writeFile(
      script,
      `import { downloadToFile } from ${JSON.stringify(downloadModule)};
       const options = { maxBytes: 1e6, timeoutMs: 10000, policy: null };
       const r = await downloadToFile(process.argv[2], process.argv[3], options);
       console.log(JSON.stringify(r));`,
    );
    const dest = inFile(dir);
    const args = ['--import', 'tsx', script, `https://127.0.0.1:${port}/a.mp4`, dest];
    const { stdout } = await run(process.execPath, args, {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: certPath },
    });
    assert.equal(JSON.parse(stdout).bytes, BODY.length);
    assert.deepEqual(await readFile(dest), BODY);
  });
});

describe('fileNameFromUrl', () => {
  const table: Array<[string, string | null]> = [
    ['https://host/video.mp4', 'video.mp4'],
    ['https://host/a/b/clip.final.mov', 'clip.final.mov'],
    ['https://host/a/video.mp4?sig=abc&name=x.txt#t=10', 'video.mp4'],
    ['https://host/my%20clip.mp4', 'my clip.mp4'],
    ['https://host/caf%C3%A9.webm', 'café.webm'],
    ['http://host/AUDIO.MP3', 'AUDIO.MP3'],
    ['https://host/', null],
    ['https://host', null],
    ['https://host/dir/', null],
    ['https://host/download', null],
    ['https://host/download?file=video.mp4', null],
    ['https://host/.', null],
    ['https://host/..', null],
    ['https://host/a/%2E%2E', null],
    ['https://host/.mp4', null],
    ['https://host/name.', null],
    ['https://host/name.mp!4', null],
    ['https://host/a%2Fb.mp4', null],
    ['https://host/a%5Cb.mp4', null],
    ['https://host/a%00b.mp4', null],
    ['https://host/a%0Ab.mp4', null],
    ['https://host/bad%E0%A4%A.mp4', null],
    ['https://host/' + 'a'.repeat(300) + '.mp4', null],
    ['ftp://host/video.mp4', null],
    ['file:///tmp/video.mp4', null],
    ['', null],
    ['video.mp4', null],
  ];
  for (const [url, expected] of table) {
    test(`${url.length > 60 ? url.slice(0, 60) + '...' : url || '(empty)'} -> ${expected}`, () => {
      assert.equal(fileNameFromUrl(url), expected);
    });
  }
});

describe('safeLocalName', () => {
  const table: Array<[string, string]> = [
    ['video.mp4', 'video.mp4'],
    ['clip.final.mov', 'clip.final.mov'],
    ['my clip (1).mp4', 'my_clip_1_.mp4'],
    ['café.webm', 'cafe.webm'],
    ['.hidden.mp4', 'hidden.mp4'],
    ['-i.mp4', 'i.mp4'],
    ['..', 'file'],
    ['../../etc/passwd', 'etc_passwd'],
    ['a\\b\u0000c.wav', 'a_b_c.wav'],
    ['日本語.mp4', 'file.mp4'],
    ['', 'file'],
  ];
  for (const [name, expected] of table) {
    test(`${JSON.stringify(name)} -> ${expected}`, () => {
      assert.equal(safeLocalName(name), expected);
    });
  }

  test('long names are cut to 100 characters and keep their extension', () => {
    const name = safeLocalName('x'.repeat(500) + '.mkv');
    assert.equal(name.length, 100);
    assert.ok(name.endsWith('.mkv'));
  });

  test('any input maps to letters, digits, _ - . without a leading dot or dash', () => {
    for (const name of ['a/b', '~!@#$%^&*()+=', '\u202Egnp.exe', '-.-.-', ' .mp4', '%2e%2e']) {
      const safe = safeLocalName(name);
      assert.match(safe, /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/, `${JSON.stringify(name)} -> ${safe}`);
    }
  });
});
