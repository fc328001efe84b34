import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createLogger } from '../../core/logger.ts';
import { LocalStorage } from '../../core/storage/local-storage.ts';
import { storageFilesRoutes } from '../../api/routes/storage-files.ts';
import { jobBackendContract } from './contract.ts';
import { LocalProcessBackend } from './local-process-backend.ts';

for (const warmRunner of [false, true]) {
  jobBackendContract(warmRunner ? 'local processes, with a warm runner' : 'local processes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ffop-local-backend-'));
    // The storage's URLs need the server's port, so the routes are attached once it listens.
    let routes: ReturnType<typeof storageFilesRoutes> | null = null;
    const server = serve({ fetch: (req) => (routes ? routes.fetch(req) : new Response(null, { status: 503 })), hostname: '127.0.0.1', port: 0 });
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as AddressInfo).port;
    const storage = new LocalStorage({ root: join(dir, 'storage'), publicBaseUrl: `http://127.0.0.1:${port}`, signingKey: 'k'.repeat(32) });
    routes = storageFilesRoutes(storage);
    const backend = new LocalProcessBackend({ logger: createLogger('silent'), workRoot: join(dir, 'work'), warmRunner });
    return {
      backend,
      storage,
      close: async () => {
        await backend.close();
        await new Promise((r) => server.close(r));
        await rm(dir, { recursive: true, force: true });
      },
    };
  });
}
