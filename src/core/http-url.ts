// The one check of an http(s) URL a user gives (the service's api_url, a daemon's --url): parsed, http or https, no credentials.
import { UsageError } from './errors.js';

/** How a URL is named and explained in the message when it is refused. */
interface HttpUrlRules {
  /** The setting or flag it came from, as the message names it: "api_url", "--url". */
  name: string;
  /** What a good value looks like: "https://HOST". */
  example: string;
  /** When set, a URL carrying a user name or password is refused with this advice (neither is echoed). */
  noCredentials?: string;
  /** The value is itself a secret (a receiver URL with a token in its path): no message echoes any part of it. */
  secretValue?: boolean;
}

/** The URL parsed; a UsageError (one line, saying what to give instead) when it is not an http(s) URL. */
export function checkHttpUrl(raw: string, rules: HttpUrlRules): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // An unparseable value is echoed to show the typo, without anything that looks like user:password@ (a secret one never).
    const shown = rules.secretValue ? '' : ` "${raw.replace(/\/\/[^/@]*@/, '//****@')}"`;
    throw new UsageError(`${rules.name}${shown} is not a URL; give ${rules.example}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${rules.name} must use http or https, not ${url.protocol}//; give ${rules.example}`);
  }
  if (rules.noCredentials !== undefined && (url.username || url.password)) {
    throw new UsageError(`${rules.name} must not carry a user name or password; ${rules.noCredentials}`);
  }
  return url;
}
