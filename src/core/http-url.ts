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
}

/** The URL parsed; a UsageError (one line, saying what to give instead) when it is not an http(s) URL. */
export function checkHttpUrl(raw: string, rules: HttpUrlRules): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // An unparseable value is echoed to show the typo, without anything that looks like user:password@.
    throw new UsageError(`${rules.name} "${raw.replace(/\/\/[^/@]*@/, '//****@')}" is not a URL; give ${rules.example}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${rules.name} must use http or https, not ${url.protocol}//; give ${rules.example}`);
  }
  if (rules.noCredentials !== undefined && (url.username || url.password)) {
    throw new UsageError(`${rules.name} must not carry a user name or password; ${rules.noCredentials}`);
  }
  return url;
}
