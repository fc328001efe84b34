// Clients made by a KeepAliveKubeConfig (core/k8s/keep-alive-kubeconfig.ts) against a real API server:
// one TLS connection for many requests, with the credentials and TLS checks client-node applies.
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { after, before, test } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KeepAliveKubeConfig } from '../../core/k8s/keep-alive-kubeconfig.ts';
import { startCluster, type Cluster } from './cluster.ts';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster();
});
after(async () => {
  await cluster.stop();
});

/** Connections opened by every https.Agent of this process while `work` runs (a spy on Node's prototype). */
async function connectionsOpened(work: () => Promise<void>): Promise<number> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with each agent as `this`, then put back
  const original = Agent.prototype.createConnection;
  let opened = 0;
  Agent.prototype.createConnection = function (this: Agent, ...args: Parameters<typeof original>) {
    opened += 1;
    return original.apply(this, args);
  };
  try {
    await work();
  } finally {
    Agent.prototype.createConnection = original;
  }
  return opened;
}

const fiveReads = (kc: KubeConfig) => async () => {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < 5; i++) assert.equal((await core.readNamespace({ name: cluster.namespace })).metadata?.name, cluster.namespace);
};

test('five requests: one connection through a KeepAliveKubeConfig, five through client-node as it is', async () => {
  const serviceAccount = await cluster.serviceAccountKubeConfig('keep-alive-test');
  const admin = cluster.kubeconfig;
  assert.equal(await connectionsOpened(fiveReads(admin)), 5, 'client-node alone (if this changes, the wrapper may be unneeded)');
  assert.equal(await connectionsOpened(fiveReads(KeepAliveKubeConfig.of(admin))), 1);
  // Bearer-token credentials go with every request over the kept connection: a 403 (authenticated, not allowed) proves it.
  const forbidden = await KeepAliveKubeConfig.of(serviceAccount)
    .makeApiClient(CoreV1Api)
    .readNamespace({ name: cluster.namespace })
    .then(
      () => 200,
      (err: { code?: number }) => err.code,
    );
  assert.equal(forbidden, 403);
});

test('the server certificate is still checked: a KeepAliveKubeConfig without the cluster CA is refused', async () => {
  const withoutCa = new KubeConfig();
  withoutCa.loadFromOptions({
    clusters: [{ name: 'c', server: cluster.server, skipTLSVerify: false }],
    users: cluster.kubeconfig.users,
    contexts: [{ name: 'x', cluster: 'c', user: cluster.kubeconfig.getCurrentUser()!.name }],
    currentContext: 'x',
  });
  await assert.rejects(
    KeepAliveKubeConfig.of(withoutCa).makeApiClient(CoreV1Api).readNamespace({ name: cluster.namespace }),
    /certificate/,
  );
});
