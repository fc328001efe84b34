// One command, live: its record once, then its event stream (GET /v1/commands/{id}/events) updates
// status, stage and progress as they change, and its end loads the final record. A stream the server
// closes before the end (its lifetime, a restart) is opened again with Last-Event-ID; when the stream
// cannot be had (an older server, a proxy that buffers, too many streams: 429), the page polls instead.
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { isActive } from './commands-page.ts';
import { messageOf } from './format.ts';
import { SseParser } from './sse.ts';
import type { CommandRecord } from './types.ts';
import type { Polled } from './use-polling.ts';

const POLL_MS = 1000;
/** Streams in a row that end without an event before the page polls instead. */
const MAX_EMPTY_STREAMS = 3;

type StreamOutcome = 'ended' | 'closed' | 'failed';

export function useCommandLive(api: Api, id: string): Polled<CommandRecord> & { live: boolean } {
  const [state, setState] = useState<{ data: CommandRecord | null; loaded: boolean; error: string | null; live: boolean }>({
    data: null,
    loaded: false,
    error: null,
    live: false,
  });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const abort = new AbortController();
    let record: CommandRecord | null = null;
    const show = (r: CommandRecord, live: boolean) => {
      record = r;
      if (!stopped) setState({ data: r, loaded: true, error: null, live });
    };
    const fail = (err: unknown) => {
      if (!stopped) setState((s) => ({ ...s, error: messageOf(err), live: false }));
    };
    const ended = () => record !== null && !isActive(record.status);

    const poll = async () => {
      try {
        show(await api.command(id), false);
      } catch (err) {
        fail(err);
      }
      if (!stopped && !ended()) timer = setTimeout(() => void poll(), POLL_MS);
    };

    let lastId: string | null = null;
    const streamOnce = async (): Promise<{ outcome: StreamOutcome; events: number }> => {
      let events = 0;
      let body: ReadableStream<Uint8Array>;
      try {
        body = await api.events(id, lastId, abort.signal);
      } catch {
        return { outcome: 'failed', events };
      }
      const reader = body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return { outcome: 'closed', events };
          for (const e of parser.push(decoder.decode(value, { stream: true }))) {
            events += 1;
            lastId = e.id ?? lastId;
            if (e.event === 'end') return { outcome: 'ended', events };
            if (e.event === 'state' && record) {
              const s = JSON.parse(e.data) as Pick<CommandRecord, 'status' | 'processing_stage' | 'progress'>;
              show({ ...record, status: s.status, processing_stage: s.processing_stage, progress: s.progress }, true);
            }
          }
        }
      } catch {
        return { outcome: stopped ? 'closed' : 'failed', events };
      } finally {
        void reader.cancel().catch(() => {});
      }
    };

    const follow = async () => {
      try {
        show(await api.command(id), false);
      } catch (err) {
        fail(err);
      }
      if (ended()) return;
      for (let empty = 0; !stopped && empty < MAX_EMPTY_STREAMS;) {
        const { outcome, events } = await streamOnce();
        if (stopped) return;
        if (outcome === 'failed') break;
        if (outcome === 'ended') {
          // The final record again, with presigned URLs for the previews of private outputs.
          try {
            show(await api.command(id), false);
            return;
          } catch (err) {
            fail(err);
            break;
          }
        }
        empty = events === 0 ? empty + 1 : 0;
      }
      if (!stopped) void poll();
    };
    void follow();
    return () => {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
    };
  }, [api, id, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}
