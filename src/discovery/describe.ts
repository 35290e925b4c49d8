// Turns what the SDK's discovery functions throw into one short, secret-free sentence naming the URL tried.
import { DiscoveryFetchError } from './errors.js';

/** One request made during discovery, as seen by the tracing fetch. */
export interface TraceEntry {
  /** The requested URL (displayUrl form). */
  url: string;
  /** The URL the final response came from, after redirects (displayUrl form); null until answered. */
  finalUrl: string | null;
  status: number | null;
  contentType: string | null;
}

const MAX_MESSAGE = 300;

function clip(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_MESSAGE ? `${oneLine.slice(0, MAX_MESSAGE)}…` : oneLine;
}

interface IssueLike {
  path?: ReadonlyArray<PropertyKey>;
  message?: string;
}

function zodIssues(error: unknown): IssueLike[] | null {
  if (!(error instanceof Error) || error.name !== 'ZodError') return null;
  const issues = (error as Error & { issues?: unknown }).issues;
  return Array.isArray(issues) ? (issues as IssueLike[]) : null;
}

/** Describes an error thrown while a step fetched and parsed a document; `last` is the last request of the step. */
export function describeError(error: unknown, last: TraceEntry | undefined): string {
  if (error instanceof DiscoveryFetchError) return error.message;
  const where = last ? (last.finalUrl ?? last.url) : null;
  if (error instanceof SyntaxError && last) {
    return `${where} answered HTTP ${last.status ?? '?'} with ${last.contentType ?? 'no content type'}, which is not JSON`;
  }
  const issues = zodIssues(error);
  if (issues) {
    const listed = issues
      .slice(0, 3)
      .map(
        (issue) =>
          `${issue.path && issue.path.length > 0 ? issue.path.map(String).join('.') : '(document)'}: ${issue.message ?? 'invalid'}`,
      )
      .join('; ');
    return clip(`${where ?? 'the server'} answered a document that is not valid metadata (${listed})`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return clip(where ? `${message} (${where})` : message);
}

/** `https://a/x (HTTP 404), https://a/y (HTTP 404)`: the requests of one step, for "not found" messages. */
export function listTried(entries: TraceEntry[]): string {
  return entries
    .map((entry) => `${entry.url} (${entry.status === null ? 'no answer' : `HTTP ${entry.status}`})`)
    .join(', ');
}
