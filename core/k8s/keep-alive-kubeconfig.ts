// @kubernetes/client-node (1.x) gives every request a new https.Agent, so every call to the API server
// opened a new TCP connection and made a full TLS handshake: CPU on both sides and extra round trips
// for each Job created or deleted and each status written. The clients a KeepAliveKubeConfig makes
// share one keep-alive agent per set of TLS settings instead. Watches keep their own connections.
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

export class KeepAliveKubeConfig extends KubeConfig {
  private readonly agents = new Map<string, HttpAgent | HttpsAgent>();

  /** The same clusters, users and contexts as `kc`. */
  static of(kc: KubeConfig): KeepAliveKubeConfig {
    if (kc instanceof KeepAliveKubeConfig) return kc;
    const copy = new KeepAliveKubeConfig();
    copy.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
    return copy;
  }

  /** Credentials as client-node applies them (headers, TLS settings), then a shared agent for those settings. */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const oneOff = context.getAgent();
    const shared = oneOff && this.sharedLike(oneOff);
    if (shared) context.setAgent(shared);
  }

  /** A keep-alive agent with the one-off agent's settings; null for a proxy's agent (left as it is). */
  private sharedLike(oneOff: HttpAgent | HttpsAgent): HttpAgent | HttpsAgent | null {
    const plainHttp = oneOff.constructor === HttpAgent;
    if (!plainHttp && oneOff.constructor !== HttpsAgent) return null;
    const options = (oneOff as HttpsAgent).options;
    // Settings can change (rotated client certificates): the key names them all.
    const key = [
      plainHttp,
      options.ca,
      options.cert,
      options.key,
      options.pfx,
      options.passphrase,
      options.rejectUnauthorized,
      options.servername,
    ]
      .map(settingText)
      .join('\n');
    let agent = this.agents.get(key);
    if (agent === undefined) {
      agent = plainHttp ? new HttpAgent({ keepAlive: true }) : new HttpsAgent({ ...options, keepAlive: true });
      this.agents.set(key, agent);
    }
    return agent;
  }
}

function settingText(value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (Array.isArray(value)) return value.map(settingText).join(',');
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
