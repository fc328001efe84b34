// The CLI's way into a running embedded service: PGlite allows one process, so while the service runs
// the CLI sends its command line over a Unix socket in the data folder (mode 0600: only the owner of
// the service can use it) and the service runs it against its own database.
import { chmod, rm } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Database } from '../../core/db/database.ts';

export const adminSocketPath = (dataDir: string) => join(dataDir, 'admin.sock');

export async function startAdminSocket(
  path: string,
  database: Database,
  run: (argv: string[], out: (line: string) => void, opts: { database: Database }) => Promise<number>,
): Promise<{ close(): Promise<void> }> {
  await rm(path, { force: true });
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    for await (const chunk of req) {
      body += String(chunk);
      if (body.length > 64 * 1024) return void res.writeHead(413).end();
    }
    const lines: string[] = [];
    let code: number;
    try {
      const { args } = JSON.parse(body) as { args: string[] };
      if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new Error('args must be strings');
      code = await run(args, (l) => lines.push(l), { database });
    } catch (err) {
      lines.push(`error: ${(err as Error).message}`);
      code = 1;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code, lines }));
  };
  // A client that hangs up mid-request makes reading its body reject: that must not become an
  // unhandled rejection, which would stop the whole service.
  const server = createServer((req, res) => void answer(req, res).catch(() => res.destroy()));
  await new Promise<void>((resolve, reject) => server.listen(path, resolve).once('error', reject));
  await chmod(path, 0o600);
  return {
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(path, { force: true });
    },
  };
}

export function runThroughAdminSocket(path: string, argv: string[], out: (line: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: path, method: 'POST', path: '/cli' }, (res) => {
      const read = async () => {
        let text = '';
        for await (const chunk of res) text += String(chunk);
        const { code, lines } = JSON.parse(text) as { code: number; lines: string[] };
        lines.forEach(out);
        return code;
      };
      // A cut or garbled answer rejects instead of leaving the CLI waiting forever.
      read().then(resolve, (err: Error) => reject(new Error(`the service's admin socket ${path} gave no usable answer: ${err.message}`)));
    });
    req.on('error', (err) =>
      reject(new Error(`the service holds the database, and its admin socket ${path} did not answer: ${err.message}`)),
    );
    req.end(JSON.stringify({ args: argv }));
  });
}
