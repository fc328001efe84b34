// A client of GET /v1/commands/{id}/events for the tests and the bench: fetch with the API key in
// its header (as the dashboard does; EventSource cannot send headers), events parsed as they come.
import { retryAfterMs } from './harness.ts';

export interface StreamEvent {
  id: string | null;
  event: string;
  data: string;
  /** When the event was parsed (ms, performance.now()). */
  at: number;
}

export interface OpenedStream {
  status: number;
  headers: Headers;
  /** Non-200 answers: their JSON body. */
  body: any;
  events: StreamEvent[];
  /** Comments (`: keep-alive`) seen. */
  comments: number;
  /** The next event not yet taken by next(), or null when the stream ended first; rejects after timeoutMs. */
  next(timeoutMs?: number): Promise<StreamEvent | null>;
  /** Resolves when the server has ended the stream (or it was closed here). */
  ended: Promise<void>;
  close(): void;
}

export async function openEventStream(
  baseUrl: string,
  key: string,
  commandId: string,
  o: { lastEventId?: string; onEvent?: (e: StreamEvent) => void } = {},
): Promise<OpenedStream> {
  const abort = new AbortController();
  const headers: Record<string, string> = { 'x-api-key': key, accept: 'text/event-stream' };
  if (o.lastEventId !== undefined) headers['last-event-id'] = o.lastEventId;
  const res = await fetch(`${baseUrl}/v1/commands/${commandId}/events`, { headers, signal: abort.signal });
  const events: StreamEvent[] = [];
  let taken = 0;
  let done = false;
  const waiter: { wake: (() => void) | null } = { wake: null };
  const stream: OpenedStream = {
    status: res.status,
    headers: res.headers,
    body: null,
    events,
    comments: 0,
    ended: Promise.resolve(),
    async next(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (taken >= events.length && !done) {
        if (Date.now() > deadline) throw new Error(`no event within ${timeoutMs} ms; had ${JSON.stringify(events)}`);
        await new Promise<void>((r) => {
          waiter.wake = r;
          setTimeout(r, 200);
        });
      }
      return taken < events.length ? events[taken++] : null;
    },
    close: () => abort.abort(),
  };
  if (res.status !== 200) {
    stream.body = await res.json().catch(() => null);
    return stream;
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  stream.ended = (async () => {
    let buffer = '';
    try {
      for (;;) {
        const { value, done: finished } = await reader.read();
        if (finished) break;
        buffer += value;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const e: StreamEvent = { id: null, event: 'message', data: '', at: performance.now() };
          let isEvent = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) stream.comments += 1;
            else if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) {
              e.data += line.slice(6);
              isEvent = true;
            }
          }
          if (isEvent) {
            events.push(e);
            o.onEvent?.(e);
            waiter.wake?.();
          }
        }
      }
    } catch {
      // aborted here
    } finally {
      done = true;
      waiter.wake?.();
    }
  })();
  return stream;
}

/** A command's `end` event: its record (what GET /v1/commands/{id} answers) and when it was parsed. */
export interface EndedCommand {
  record: any;
  /** performance.now() when the `end` event was parsed. */
  at: number;
}

/**
 * Waits for the command to end as a client of the event stream does (ApiClient.waitForEnd polls
 * instead): it reconnects with Last-Event-ID when a stream closes before the `end` event, and waits
 * Retry-After on a 429 (too many open streams) or a 503 that asks for it.
 */
export async function waitForEndEvent(baseUrl: string, key: string, commandId: string, timeoutMs = 600_000): Promise<EndedCommand> {
  const deadline = Date.now() + timeoutMs;
  let lastEventId: string | undefined;
  while (Date.now() < deadline) {
    const stream = await openEventStream(baseUrl, key, commandId, { lastEventId });
    const retryMs = retryAfterMs(stream);
    if (retryMs !== null) {
      await new Promise((r) => setTimeout(r, retryMs));
      continue;
    }
    if (stream.status !== 200) throw new Error(`GET .../events answered ${stream.status}: ${JSON.stringify(stream.body)}`);
    try {
      for (let e = await stream.next(deadline - Date.now()); e !== null; e = await stream.next(deadline - Date.now())) {
        lastEventId = e.id ?? lastEventId;
        if (e.event === 'end') return { record: JSON.parse(e.data), at: e.at };
      }
    } finally {
      stream.close();
    }
  }
  throw new Error(`command ${commandId} did not end within ${timeoutMs} ms`);
}
