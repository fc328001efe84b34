// The burst's load generator: node:http on one keep-alive agent, bodies sent with their length. The
// client runs on the same two cores as the service it measures, so its own cost is taken from the
// service: the harness's fetch-based ApiClient (undici) spent about half a core on the burst, this
// client about a fifth. (Polls are measured with wrk, in C, for the same reason.)
import { Agent, request } from 'node:http';

export class KeepAliveClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  private readonly url: URL;
  private readonly key: string;

  constructor(base: string, key: string) {
    this.url = new URL(base);
    this.key = key;
  }

  /** One request with the API key; the answer's status and parsed JSON body. */
  request(method: string, path: string, json?: string): Promise<{ status: number; body: any }> {
    const headers: Record<string, string | number> = { 'x-api-key': this.key };
    if (json !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    return new Promise((resolve, reject) => {
      const req = request({ agent: this.agent, host: this.url.hostname, port: this.url.port, method, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode!, body: JSON.parse(text) });
          } catch {
            resolve({ status: res.statusCode!, body: text });
          }
        });
      });
      req.on('error', reject);
      req.end(json);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * `count` submits of `body` from `clients` clients at once, each sending its next as soon as the last is
 * answered; the command ids and each submit's latency (ms) are appended as they come (a caller may read
 * them meanwhile). Anything but 200 fails the run.
 */
export async function submitFromClients(
  client: KeepAliveClient,
  body: string,
  o: { count: number; clients: number; ids: string[]; submitMs: number[] },
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: o.clients }, async () => {
      while (next++ < o.count) {
        const s0 = performance.now();
        const res = await client.request('POST', '/v1/run-ffmpeg-command', body);
        if (res.status !== 200) throw new Error(`submit answered ${res.status}: ${JSON.stringify(res.body)}`);
        o.ids.push(res.body.command_id);
        o.submitMs.push(performance.now() - s0);
      }
    }),
  );
}
