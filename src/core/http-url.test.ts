// The one check of a user-given http(s) URL: what passes, and the one-line messages (never a password) of what does not.
import { describe, expect, it } from 'vitest';
import { checkHttpUrl } from './http-url.js';

const SERVICE = { name: 'api_url', example: 'https://HOST', noCredentials: 'give the API key with --api-key' };

describe('checkHttpUrl', () => {
  it('passes an http(s) URL through, parsed', () => {
    expect(checkHttpUrl('https://api.example.com/prefix', SERVICE).pathname).toBe('/prefix');
    expect(checkHttpUrl('http://127.0.0.1:8080', SERVICE).port).toBe('8080');
  });

  it.each([
    ['not a url', 'api_url "not a url" is not a URL; give https://HOST'],
    ['ftp://host', 'api_url must use http or https, not ftp://; give https://HOST'],
    ['https://user:s3cret@host', 'api_url must not carry a user name or password; give the API key with --api-key'],
    ['https://user:s3cret@host:99999', 'api_url "https://****@host:99999" is not a URL; give https://HOST'],
  ])('%s: one line saying what to give instead, never the password', (raw, message) => {
    expect(() => checkHttpUrl(raw, SERVICE)).toThrow(message);
    try {
      checkHttpUrl(raw, SERVICE);
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cret');
      expect((error as { code?: string }).code).toBe('E_USAGE');
    }
  });

  it('allows credentials where no advice against them is given (a daemon URL)', () => {
    expect(checkHttpUrl('http://user:pw@127.0.0.1:9090', { name: '--url', example: 'http://HOST:PORT' }).username).toBe(
      'user',
    );
  });
});
