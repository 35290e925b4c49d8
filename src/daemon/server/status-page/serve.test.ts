// The status page's assets and conditional answers: 304 for a current If-None-Match, a script that parses and writes no markup.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { PAGE_SCRIPT } from './page-script.js';
import { etagOf, ifNoneMatch, PAGE_CSP, PAGE_PATHS, sendTagged, servePage } from './serve.js';

/** A response that records what was written. */
function recorder(): {
  res: ServerResponse;
  sent: () => { status: number; headers: Record<string, unknown>; body: string | undefined };
} {
  let status = 0;
  let headers: Record<string, unknown> = {};
  let body: string | undefined;
  const res = {
    writeHead(code: number, h: Record<string, unknown>) {
      status = code;
      headers = h;
      return res;
    },
    end(chunk?: string) {
      body = chunk;
      return res;
    },
  } as unknown as ServerResponse;
  return { res, sent: () => ({ status, headers, body }) };
}

function request(headers: Record<string, string> = {}): IncomingMessage {
  return { headers } as IncomingMessage;
}

describe('ifNoneMatch', () => {
  const tag = etagOf('body');
  it('matches the tag, a list holding it, its weak form and *', () => {
    expect(ifNoneMatch(tag, tag)).toBe(true);
    expect(ifNoneMatch(`"other", ${tag}`, tag)).toBe(true);
    expect(ifNoneMatch(`W/${tag}`, tag)).toBe(true);
    expect(ifNoneMatch('*', tag)).toBe(true);
  });
  it('does not match another tag or no header', () => {
    expect(ifNoneMatch(etagOf('other body'), tag)).toBe(false);
    expect(ifNoneMatch(undefined, tag)).toBe(false);
    expect(ifNoneMatch('', tag)).toBe(false);
  });
});

describe('sendTagged', () => {
  it('sends the body with its ETag, then 304 without a body to a client that names it', () => {
    const first = recorder();
    sendTagged(request(), first.res, 'application/json', '{"a":1}\n', false);
    expect(first.sent()).toMatchObject({
      status: 200,
      body: '{"a":1}\n',
      headers: { etag: etagOf('{"a":1}\n'), 'cache-control': 'no-store' },
    });
    const again = recorder();
    sendTagged(request({ 'if-none-match': etagOf('{"a":1}\n') }), again.res, 'application/json', '{"a":1}\n', false);
    expect(again.sent()).toMatchObject({ status: 304, body: undefined, headers: { etag: etagOf('{"a":1}\n') } });
    const changed = recorder();
    sendTagged(request({ 'if-none-match': etagOf('{"a":1}\n') }), changed.res, 'application/json', '{"a":2}\n', false);
    expect(changed.sent()).toMatchObject({ status: 200, body: '{"a":2}\n' });
  });
});

describe('servePage', () => {
  it('serves / and its assets with the content security policy, and nothing else', () => {
    expect(PAGE_PATHS).toEqual(['/', '/status-page/page.js', '/status-page/page.css', '/status-page/icon.svg']);
    for (const path of PAGE_PATHS) {
      const out = recorder();
      expect(servePage(request(), out.res, path, false)).toBe(true);
      expect(out.sent().status).toBe(200);
      expect(out.sent().headers['content-security-policy']).toBe(PAGE_CSP);
      expect(out.sent().body?.length).toBeGreaterThan(100);
    }
    expect(servePage(request(), recorder().res, '/status-page/', false)).toBe(false);
    expect(servePage(request(), recorder().res, '/index.html', false)).toBe(false);
  });
  it('answers HEAD without a body', () => {
    const out = recorder();
    servePage(request(), out.res, '/', true);
    expect(out.sent()).toMatchObject({ status: 200, body: undefined });
  });
});

describe('the page script', () => {
  it('parses as a script', () => {
    expect(() => new Script(PAGE_SCRIPT, { filename: 'page.js' })).not.toThrow();
  });
  it('writes no markup, evaluates no text, and asks no other origin', () => {
    expect(PAGE_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
    // The only URLs in it: converge reconcile's default --url, compared with the page's origin.
    expect(PAGE_SCRIPT.match(/https?:\/\/[^'"\s]*/g)).toEqual(['http://127.0.0.1:8080', 'http://localhost:8080']);
    expect(PAGE_SCRIPT.match(/fetch\([^;]*/g)).toEqual([
      "fetch(path, { cache: 'no-store' })",
      "fetch(statusPath(), { headers, cache: 'no-store' })",
    ]);
    // statusPath(): /status on the page's own origin, a first window, then the answers since its token.
    expect(PAGE_SCRIPT).toContain("if (firstWindow) return '/status?format=2&first=' + FIRST_WINDOW;");
    expect(PAGE_SCRIPT).toContain(
      "return '/status?format=2&plan=delta&keys=delta&since=' + encodeURIComponent(sequence);",
    );
    // path: the page's own /history/KIND/NAME.
    expect(PAGE_SCRIPT).toContain(
      "const path = '/history/' + encodeURIComponent(row.kind) + '/' + encodeURIComponent(row.name);",
    );
  });
});
