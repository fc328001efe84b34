import { KubeConfig } from '@kubernetes/client-node';

/** In a pod: the pod's ServiceAccount; elsewhere: $KUBECONFIG or ~/.kube/config. */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  if (process.env.KUBERNETES_SERVICE_HOST && !process.env.KUBECONFIG) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}
