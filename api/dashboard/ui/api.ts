// The /v1 API from the browser, with the API key of the signed-in user. The key lives in sessionStorage:
// it is gone when the tab closes, and it is sent only in the X-API-KEY header (no cookie, so another
// site cannot make the browser send it).
import type { CommandListItem, CommandRecord, Delivery, StoredFile, UploadSession, Webhook, WebhookWithSecret } from './types.ts';

const KEY_ITEM = 'ffop-api-key';

export const savedKey = (): string | null => sessionStorage.getItem(KEY_ITEM);
export const saveKey = (key: string) => sessionStorage.setItem(KEY_ITEM, key);
export const forgetKey = () => sessionStorage.removeItem(KEY_ITEM);

export interface FieldError {
  loc: (string | number)[];
  msg: string;
}

/** An answer other than 2xx: `message` is the API's detail, `fields` its 422 entries. */
export class ApiError extends Error {
  readonly status: number;
  readonly fields: FieldError[];
  constructor(status: number, message: string, fields: FieldError[] = []) {
    super(message);
    this.status = status;
    this.fields = fields;
  }
}

function errorOf(status: number, body: unknown, text: string): ApiError {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return new ApiError(status, detail);
  if (Array.isArray(detail)) {
    const fields = (detail as FieldError[]).filter((f) => Array.isArray(f?.loc) && typeof f?.msg === 'string');
    return new ApiError(status, fields.map((f) => `${f.loc.join('.')}: ${f.msg}`).join('\n') || 'Invalid request', fields);
  }
  return new ApiError(status, `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
}

export class Api {
  readonly #key: string;
  readonly #onUnauthorized: () => void;

  constructor(key: string, onUnauthorized: () => void) {
    this.#key = key;
    this.#onUnauthorized = onUnauthorized;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { 'X-API-KEY': this.#key };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const json = parsedOrNull(text);
    if (!res.ok) throw this.#failure(res.status, json, text);
    return json as T;
  }

  /** The error a request that was not 2xx throws; a 401 also signs out. */
  #failure(status: number, json: unknown, text: string): ApiError {
    if (status === 401) this.#onUnauthorized();
    return errorOf(status, json, text);
  }

  listCommands = (limit: number, offset: number) => this.request<CommandListItem[]>('GET', `/v1/commands?limit=${limit}&offset=${offset}`);
  /** `presign`: private outputs come with presigned URLs (valid an hour), so their previews play. */
  command = (id: string, presign = true) =>
    this.request<CommandRecord>('GET', `/v1/commands/${encodeURIComponent(id)}${presign ? '?presigned_ttl_seconds=3600' : ''}`);
  /** The command's event stream (use-command-live.ts reads it); throws as `request` does when it is not 200. */
  async events(id: string, lastEventId: string | null, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const headers: Record<string, string> = { 'X-API-KEY': this.#key, accept: 'text/event-stream' };
    if (lastEventId !== null) headers['last-event-id'] = lastEventId;
    const res = await fetch(`/v1/commands/${encodeURIComponent(id)}/events`, { headers, signal });
    if (res.ok && res.body) return res.body;
    const text = await res.text();
    throw this.#failure(res.status, parsedOrNull(text), text);
  }
  cancel = (id: string) => this.request<CommandRecord>('POST', `/v1/commands/${encodeURIComponent(id)}/cancel`);
  submit = (body: unknown) => this.request<{ command_id: string }>('POST', '/v1/run-ffmpeg-command', body);
  listFiles = (limit: number, offset: number) => this.request<StoredFile[]>('GET', `/v1/files?limit=${limit}&offset=${offset}`);
  initUpload = (body: { filename: string; size_bytes: number; is_private: boolean }) =>
    this.request<UploadSession>('POST', '/v1/files/init-upload', body);
  completeUpload = (id: string, parts: { part_number: number; etag: string }[]) =>
    this.request<StoredFile>('POST', `/v1/files/${encodeURIComponent(id)}/complete-upload`, { parts });
  abortUpload = (id: string) => this.request<object>('POST', `/v1/files/${encodeURIComponent(id)}/abort-upload`);
  deleteFile = (id: string) => this.request<StoredFile>('DELETE', `/v1/files/${encodeURIComponent(id)}`);
  webhook = () => this.request<Webhook>('GET', '/v1/webhook');
  setWebhook = (url: string, rotateSecret: boolean) =>
    this.request<WebhookWithSecret>('PUT', '/v1/webhook', { url, ...(rotateSecret ? { rotate_secret: true } : {}) });
  deleteWebhook = () => this.request<null>('DELETE', '/v1/webhook');
  testWebhook = () => this.request<{ delivery_id: string }>('POST', '/v1/webhook/test');
  deliveries = (limit: number, offset: number) => this.request<Delivery[]>('GET', `/v1/webhook/deliveries?limit=${limit}&offset=${offset}`);
}

/** The body as JSON, or null when it is empty or not JSON. */
function parsedOrNull(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
