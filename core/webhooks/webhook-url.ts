// Which webhook URLs an account may set. Host names are checked when a message is sent (their
// addresses may change); an IP literal that is not public is refused at once, unless the allowlist
// that downloads use (FFOP_ALLOW_ADDRESSES) allows it.
import type { AddressPolicy } from '../net/address-policy.ts';
import { hostOf, literalRefusal, portOf } from '../net/guarded-connection.ts';

export const MAX_WEBHOOK_URL_CHARS = 2048;

/** What is wrong with `url` as a webhook URL, or null when it may be set. */
export function webhookUrlProblem(url: string, policy: AddressPolicy): string | null {
  if (url.length > MAX_WEBHOOK_URL_CHARS) return `the URL is longer than ${MAX_WEBHOOK_URL_CHARS} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a valid URL';
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '') {
    return 'the URL must be http or https with a host';
  }
  if (parsed.username !== '' || parsed.password !== '') return 'the URL must not hold user credentials';
  return literalAddressProblem(parsed, policy);
}

/** The refusal of a URL whose host is a non-public IP literal (the URL is already known to be http(s)). */
export function literalAddressProblem(parsed: URL, policy: AddressPolicy): string | null {
  const refusal = literalRefusal(policy, hostOf(parsed), portOf(parsed));
  return refusal && `${refusal}: webhooks are sent to public addresses only (FFOP_ALLOW_ADDRESSES lists exceptions)`;
}
