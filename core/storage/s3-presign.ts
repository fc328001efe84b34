// SigV4 query-string presigning (AWS "Authenticating Requests: Using Query Parameters") for requests
// whose headers must be signed too. The minio client presigns `host` only and deliberately leaves
// Content-Length out; a part URL that signs `content-length` makes the S3 server refuse any body of
// another size (SignatureDoesNotMatch), so a client cannot park more than the part may hold.
import { createHash, createHmac } from 'node:crypto';

export interface S3PresignRequest {
  method: 'GET' | 'PUT';
  /** Origin of the S3 API (path-style addressing: origin/bucket/key). */
  endpoint: string;
  region: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  key: string;
  /** Request query parameters besides the X-Amz-* ones (e.g. uploadId, partNumber). */
  query: Record<string, string>;
  /** Headers the request must carry with exactly these values, signed; names in lower case. Host is always signed. */
  headers: Record<string, string>;
  expiresSeconds: number;
  date: Date;
}

/** RFC 3986 escaping as SigV4 wants it: everything but unreserved characters. */
export function awsEscape(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
}

const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const sha256Hex = (data: string) => createHash('sha256').update(data).digest('hex');

/** `20240102T030405Z` */
function amzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export function presignS3Url(req: S3PresignRequest): string {
  const origin = new URL(req.endpoint);
  const stamp = amzDate(req.date);
  const day = stamp.slice(0, 8);
  const scope = `${day}/${req.region}/s3/aws4_request`;

  const headers: Record<string, string> = { ...req.headers, host: origin.host };
  const signedHeaders = Object.keys(headers).sort();
  const path = `/${awsEscape(req.bucket)}/${req.key.split('/').map(awsEscape).join('/')}`;

  const query: [string, string][] = [
    ...Object.entries(req.query),
    ['X-Amz-Algorithm', 'AWS4-HMAC-SHA256'],
    ['X-Amz-Credential', `${req.accessKey}/${scope}`],
    ['X-Amz-Date', stamp],
    ['X-Amz-Expires', String(req.expiresSeconds)],
    ['X-Amz-SignedHeaders', signedHeaders.join(';')],
  ];
  const canonicalQuery = query
    .map(([name, value]) => [awsEscape(name), awsEscape(value)])
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');

  const canonicalRequest = [
    req.method,
    path,
    canonicalQuery,
    signedHeaders.map((name) => `${name}:${headers[name].trim()}\n`).join(''),
    signedHeaders.join(';'),
    'UNSIGNED-PAYLOAD',
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${req.secretKey}`, day), req.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(stringToSign).digest('hex');
  return `${origin.origin}${path}?${canonicalQuery}&X-Amz-Signature=${signature}`;
}
