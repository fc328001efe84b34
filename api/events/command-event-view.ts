// What a command's event stream sends of a read: its state event (status, stage, progress) and its id,
// and the final record. Made once per read of the poll cache, then shared by every stream of the
// command: a change that a thousand streams watch costs one JSON, one id and one record.
import { createHash } from 'node:crypto';
import { hasEnded } from '../../core/commands/command-status.ts';
import type { CommandWithOutputs } from '../../core/commands/commands-repo.ts';
import { progressView } from '../../core/commands/progress.ts';

export interface CommandStateView {
  /** The SSE id: names the state, so that a client resuming with it gets nothing it has. */
  id: string;
  /** The `state` event's data. */
  json: string;
  ended: boolean;
}

const views = new WeakMap<CommandWithOutputs, CommandStateView>();

export function stateView(value: CommandWithOutputs): CommandStateView {
  let view = views.get(value);
  if (view === undefined) {
    const c = value.row;
    const p = progressView(c);
    const json = JSON.stringify({
      command_id: c.id,
      status: c.status,
      processing_stage: c.processingStage,
      queue_reason: c.status === 'QUEUED' ? c.queueReason : null,
      progress: p && { percent: p.percent, out_time_seconds: p.outTimeSeconds, speed: p.speed },
    });
    view = { id: stateId(json), json, ended: hasEnded(c.status) };
    views.set(value, view);
  }
  return view;
}

/** 128 bits of the state's digest, base64url: equal states have equal ids, different ones in practice never. */
export function stateId(json: string): string {
  return createHash('sha256').update(json).digest('base64url').slice(0, 22);
}

const records = new WeakMap<CommandWithOutputs, Promise<string>>();

/** The `end` event's data, the poll record's JSON, made once per read. */
export function recordJson(value: CommandWithOutputs, record: (value: CommandWithOutputs) => Promise<unknown>): Promise<string> {
  let json = records.get(value);
  if (json === undefined) {
    json = record(value).then((r) => JSON.stringify(r));
    records.set(value, json);
  }
  return json;
}
