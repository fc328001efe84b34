// Test helper: a loopback port for servers that must know their URL before they start.
import { createServer, type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 a moment ago (the server binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
