// What the e2e tests of the status page compare: an answer of /status as the page decodes it (its own script), and
// a document of format 1 as the page holds it after it decoded format 2 (rows less what format 2 leaves out).
import { runInNewContext } from 'node:vm';
import { ROW_OMITTED } from '../../src/core/status-compact.js';
import { SCRIPT_FORMAT } from '../../src/daemon/server/status-page/script-format.js';

/** The page's decoder of format 2 (src/daemon/server/status-page/script-format.ts), run as the page runs it. */
export const pageDecode = runInNewContext(`${SCRIPT_FORMAT}\ndecodeStatus`) as (
  answer: unknown,
) => Record<string, unknown>;

/** The body of a /status answer, decoded as the page decodes it. */
export function decodedBody(body: string): Record<string, unknown> {
  return JSON.parse(JSON.stringify(pageDecode(JSON.parse(body)))) as Record<string, unknown>;
}

/** A whole document of format 1 as the page holds it after format 2: format_version 2, rows less ROW_OMITTED. */
export function asPageHolds(doc: Record<string, unknown>): Record<string, unknown> {
  const rows = (doc.resources as Array<Record<string, unknown>>).map((row) =>
    Object.fromEntries(Object.entries(row).filter(([field]) => !ROW_OMITTED.includes(field))),
  );
  return { ...doc, format_version: '2', resources: rows };
}

/** Whether a /status URL the page asked is its first window (first=N). */
export function isFirstWindow(url: string): boolean {
  return new URL(url).searchParams.has('first');
}
