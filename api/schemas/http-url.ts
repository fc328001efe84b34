// URLs of files to fetch: read by the WHATWG URL parser (as fetch reads them), http or https only.
import * as v from 'valibot';
import { msg, str } from './validation.ts';
import { TEXT_CHAR } from './body.ts';

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

// JSON Schema has no keyword for the WHATWG parser. The document's pattern is a form the parser always
// accepts: a host name (no '--', so no punycode to decode; its last label starts with a letter, so it is
// not read as an IPv4 number), or a dotted IPv4 address; a port up to 65535. The description names the rest.
const label = '[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*';
const hostName = `(?:${label}\\.)*[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*\\.?`;
const octet = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const ipv4 = `(?:${octet}\\.){3}${octet}`;
const port = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})';
const userInfo = '[^\\s/?#@\\\\\\u0000]*@';
export const HTTP_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?://(?:${userInfo})?(?:${hostName}|${ipv4})(?::${port})?(?:[/?#]${TEXT_CHAR}*)?$`;

const DESCRIPTION =
  'An http or https URL, read as the WHATWG URL Standard (fetch) reads it. The pattern is a form always accepted; ' +
  'other forms that parse (IPv6 literals, internationalized host names) are accepted too.';

export const httpUrl = () =>
  v.pipe(
    str(),
    v.check(isHttpUrl, msg('url_parsing', 'Input should be a valid URL with an http or https scheme')),
    v.metadata({ format: 'uri', pattern: HTTP_URL_PATTERN, description: DESCRIPTION }),
  );
