// Pod status bodies as the kubelet writes them (pods/status, strategic merge patch), for a pod whose
// one container is a local process. The Job controller reads phase; kubectl, the operator and the
// tests read containerStatuses and conditions, so those are filled in the kubelet's shape too.
import type { V1ContainerState, V1PodCondition } from '@kubernetes/client-node';

export const NODE_IP = '127.0.0.1';

export interface ContainerInfo {
  name: string;
  image: string;
  /** Stands in for the runtime's container id. */
  containerId: string;
}

export interface ProcessExit {
  exitCode: number;
  signal?: number;
  /** Completed, Error, StartError, ContainerStatusUnknown, ... */
  reason: string;
  message?: string;
  startedAt: Date;
  finishedAt: Date;
}

export interface PodStatusPatch {
  metadata: { uid: string };
  status: Record<string, unknown>;
}

function condition(type: string, status: 'True' | 'False', at: Date, reason?: string): V1PodCondition {
  return { type, status, reason, lastTransitionTime: at, lastProbeTime: undefined };
}

const addresses = { hostIP: NODE_IP, hostIPs: [{ ip: NODE_IP }], podIP: NODE_IP, podIPs: [{ ip: NODE_IP }] };

export function runningStatus(uid: string, container: ContainerInfo, startedAt: Date): PodStatusPatch {
  return {
    metadata: { uid },
    status: {
      phase: 'Running',
      startTime: startedAt,
      ...addresses,
      conditions: [
        condition('PodReadyToStartContainers', 'True', startedAt),
        condition('Initialized', 'True', startedAt),
        condition('ContainersReady', 'True', startedAt),
        condition('Ready', 'True', startedAt),
      ],
      containerStatuses: [containerStatus(container, { running: { startedAt } }, true)],
    },
  };
}

/** The final status: Succeeded if the process exited 0, else Failed. */
export function terminatedStatus(uid: string, container: ContainerInfo, exit: ProcessExit): PodStatusPatch {
  const at = exit.finishedAt;
  return {
    metadata: { uid },
    status: {
      phase: exit.exitCode === 0 ? 'Succeeded' : 'Failed',
      startTime: exit.startedAt,
      ...addresses,
      conditions: [
        condition('PodReadyToStartContainers', 'False', at),
        condition('Initialized', 'True', exit.startedAt),
        condition('ContainersReady', 'False', at, 'PodCompleted'),
        condition('Ready', 'False', at, 'PodCompleted'),
      ],
      containerStatuses: [
        containerStatus(
          container,
          {
            terminated: {
              exitCode: exit.exitCode,
              signal: exit.signal,
              reason: exit.reason,
              message: exit.message || undefined,
              startedAt: exit.startedAt,
              finishedAt: exit.finishedAt,
              containerID: container.containerId,
            },
          },
          false,
        ),
      ],
    },
  };
}

/** A pod that never got a process: Failed with the reason on the pod and its container. */
export function notStartedStatus(uid: string, container: ContainerInfo, reason: string, message: string): PodStatusPatch {
  const now = new Date();
  const patch = terminatedStatus(uid, container, { exitCode: 128, reason: 'StartError', message, startedAt: now, finishedAt: now });
  patch.status.reason = reason;
  patch.status.message = message;
  return patch;
}

function containerStatus(container: ContainerInfo, state: V1ContainerState, running: boolean) {
  return {
    name: container.name,
    image: container.image,
    imageID: '',
    containerID: container.containerId,
    ready: running,
    started: running,
    restartCount: 0,
    state,
  };
}
