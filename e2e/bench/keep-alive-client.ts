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
