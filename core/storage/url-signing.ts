// HMAC-signed storage URLs for the local-folder backend (S3 signs its own).
// A signed URL carries `X-Expires` (unix seconds) and `X-Signature` (hex HMAC-SHA256) in its query.
// The signed string is `method\nkey\nexpires\nuploadId\npartNumber`; the last two fields are empty
// for whole-object URLs and are reserved for multipart part uploads. A part URL also binds the part's
// size: `\npartSize` is appended, so the URL accepts exactly that many bytes (as a SigV4 URL that
// signs Content-Length does on S3).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const EXPIRES_PARAM = 'X-Expires';
export const SIGNATURE_PARAM = 'X-Signature';

/** HEAD is signed and checked as GET. */
export type SignedMethod = 'GET' | 'PUT';

export interface SignedRequest {
  method: SignedMethod;
  key: string;
  /** Unix seconds; the URL is valid up to and including this second. */
  expires: number;
  uploadId?: string;
  partNumber?: number;
  /** Part URLs: the exact byte count the PUT must carry. */
  partSize?: number;
}

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'malformed' | 'invalid' | 'expired' };

/** Minimum secret length, so a misconfigured empty or toy secret fails loudly at startup. */
export const MIN_SIGNING_KEY_BYTES = 16;

export function assertSigningKey(secret: string | Uint8Array): void {
  const length = typeof secret === 'string' ? Buffer.byteLength(secret) : secret.byteLength;
  if (length < MIN_SIGNING_KEY_BYTES) {
    throw new Error(`storage signing key must be at least ${MIN_SIGNING_KEY_BYTES} bytes`);
  }
}

export function stringToSign(req: SignedRequest): string {
  // Keys are validated to hold no control characters, so '\n' cannot shift fields. The size is a sixth
  // field only when present: whole-object URLs keep the five-field string they were signed with.
  const fields = [req.method, req.key, String(req.expires), req.uploadId ?? '', req.partNumber === undefined ? '' : String(req.partNumber)];
  if (req.partSize !== undefined) fields.push(String(req.partSize));
  return fields.join('\n');
}

export function signRequest(secret: string | Uint8Array, req: SignedRequest): string {
  return createHmac('sha256', secret).update(stringToSign(req)).digest('hex');
}

/** The query string (without '?') that makes a URL valid for `req`. */
export function signedQuery(secret: string | Uint8Array, req: SignedRequest): string {
  const params = new URLSearchParams();
  params.set(EXPIRES_PARAM, String(req.expires));
  params.set(SIGNATURE_PARAM, signRequest(secret, req));
  return params.toString();
}

/**
 * Checks the signature parameters of a request for `method` and `key` at `nowSeconds`.
 * The signature is checked before the expiry so that "expired" is only ever said of a genuine URL.
 */
export function checkSignedQuery(
  secret: string | Uint8Array,
  target: Omit<SignedRequest, 'expires'>,
  query: URLSearchParams,
  nowSeconds: number,
): SignatureCheck {
  const expiresText = query.get(EXPIRES_PARAM);
  const signatureText = query.get(SIGNATURE_PARAM);
  if (expiresText === null || signatureText === null) return { ok: false, reason: 'missing' };
  if (!/^[0-9]{1,12}$/.test(expiresText) || !/^[0-9a-f]{64}$/i.test(signatureText)) {
    return { ok: false, reason: 'malformed' };
  }
  const expires = Number(expiresText);
  const expected = Buffer.from(signRequest(secret, { ...target, expires }), 'hex');
  const given = Buffer.from(signatureText, 'hex');
  if (!timingSafeEqual(expected, given)) return { ok: false, reason: 'invalid' };
  if (nowSeconds > expires) return { ok: false, reason: 'expired' };
  return { ok: true };
}
