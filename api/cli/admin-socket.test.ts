// The admin socket is reachable by the service's own user only, but a client that hangs up or sends
// garbage must still never stop the service, nor leave the CLI waiting.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Database } from '../../core/db/database.ts';
import { runThroughAdminSocket, startAdminSocket } from './admin-socket.ts';

/** The CLI runner double: echoes its arguments, touches no database. */
const echoCli = (argv: string[], out: (line: string) => void) => {
  out(argv.join(' '));
  return Promise.resolve(0);
};
const noDatabase = {} as Database;

test('a client hanging up mid-body does not stop the service; the next command is answered', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-admin-'));
  const path = join(dir, 'admin.sock');
  const admin = await startAdminSocket(path, noDatabase, echoCli);
  const rejections: unknown[] = [];
  const onRejection = (err: unknown) => rejections.push(err);
  process.on('unhandledRejection', onRejection);
  try {
    await new Promise<void>((resolve) => {
      const socket = connect(path, () => {
        socket.write('POST /cli HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{"args": [');
        setTimeout(() => socket.destroy(), 50);
      });
      socket.on('close', () => resolve());
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(rejections, []);
    const lines: string[] = [];
    assert.equal(await runThroughAdminSocket(path, ['keys', 'list'], (l) => lines.push(l)), 0);
    assert.deepEqual(lines, ['keys list']);
  } finally {
    process.off('unhandledRejection', onRejection);
    await admin.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('a garbled answer fails the CLI call instead of leaving it waiting', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ffop-admin-'));
  const path = join(dir, 'admin.sock');
  const garbling = createServer((socket) => socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n{"co')));
  await new Promise<void>((resolve) => garbling.listen(path, resolve));
  try {
    await assert.rejects(
      runThroughAdminSocket(path, ['keys', 'list'], () => {}),
      /gave no usable answer/,
    );
  } finally {
    await new Promise((r) => garbling.close(r));
    await rm(dir, { recursive: true, force: true });
  }
});
