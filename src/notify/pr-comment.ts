// Posts the plan comment on a pull or merge request, or updates the one its marker names (docs/pull-requests.md): the HTTP and the answer classes of the commit-status receiver, a bounded retry.
import type { Agent } from 'undici';
import {
  COMMENTS_PER_PAGE,
  createRequest,
  isMarked,
  listRequest,
  readCommentPage,
  readWritten,
  updateRequest,
  type CommentApi,
  type CommentRequest,
} from '../core/notify/pr-comment.js';
import { backoffDelay } from '../service/backoff.js';
import { deliveryAgent, requestTo, type PostAnswer } from './post.js';
import { classifyAnswer } from './sender.js';

/** Where the comment goes and who writes it. The token only ever goes into the Authorization header. */
export interface CommentTarget {
  api: CommentApi;
  /** The host's API base URL (https://api.github.com, https://gitlab.example.com/api/v4). */
  apiUrl: string;
  /** OWNER/NAME (GitHub, Gitea) or the project's path (GitLab). */
  repository: string;
  /** The pull request's number, or the merge request's iid. */
  pull: number;
  token: string;
  /** The environment variable the token came from, for messages. */
  tokenName: string;
  userAgent: string;
}

/** How often and how long a failed request (no answer, 408, 429, 5xx, a rate limit) is tried again. */
export interface RetryBound {
  /** Tries of one request in all. */
  attempts: number;
  /** Ceiling of the first wait (doubling, full jitter: src/service/backoff.ts). */
  baseMs: number;
  capMs: number;
  /** The longest Retry-After (or rate-limit reset) waited out; a longer one ends the command. */
  maxWaitMs: number;
  /** Deadline of one request. */
  timeoutMs: number;
}

export const DEFAULT_RETRY: RetryBound = {
  attempts: 5,
  baseMs: 1_000,
  capMs: 15_000,
  maxWaitMs: 60_000,
  timeoutMs: 30_000,
};

export type CommentResult =
  | { ok: true; action: 'created' | 'updated' | 'unchanged'; id: number; url?: string }
  | { ok: false; code: 'E_COMMENT_REFUSED' | 'E_COMMENT_UNAVAILABLE' | 'E_COMMENT_ANSWER'; message: string };
type Failure = Extract<CommentResult, { ok: false }>;

/** Pages of comments read at most when looking for the marked one (10,000 comments). */
const MAX_PAGES = 100;
/** Bytes of one answer read at most: a page of 100 comments of GitHub's longest. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

function header(answer: PostAnswer, name: string): string | undefined {
  if ('failure' in answer) return undefined;
  const value = answer.headers?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A GitHub rate limit that came as a 403 (its primary limit: no requests left; its secondary one: a Retry-After). */
function rateLimited(answer: PostAnswer): boolean {
  if ('failure' in answer || (answer.status !== 403 && answer.status !== 429)) return false;
  return (
    header(answer, 'x-ratelimit-remaining') === '0' ||
    header(answer, 'retry-after') !== undefined ||
    answer.status === 429
  );
}

/** How long the host asked to be left alone: Retry-After (seconds), or until its rate-limit reset (epoch seconds). */
function askedWaitMs(answer: PostAnswer, now: number): number | undefined {
  const after = header(answer, 'retry-after');
  if (after !== undefined && /^\d+$/.test(after)) return Number(after) * 1000;
  const reset = header(answer, 'x-ratelimit-reset');
  if (header(answer, 'x-ratelimit-remaining') === '0' && reset !== undefined && /^\d+$/.test(reset))
    return Math.max(0, Number(reset) * 1000 - now);
  return undefined;
}

/** The host's own words of a refusal (GitHub's and GitLab's `message`, GitLab's `error`), short, with the token taken out. */
function hostWords(answer: PostAnswer, token: string): string {
  if ('failure' in answer || !answer.body) return '';
  let said: unknown;
  try {
    const data = JSON.parse(answer.body) as { message?: unknown; error?: unknown };
    said = data.message ?? data.error;
  } catch {
    return '';
  }
  if (typeof said !== 'string' && typeof said !== 'object') return '';
  const text = (typeof said === 'string' ? said : JSON.stringify(said))
    .split(token)
    .join('***')
    .replace(/\s+/g, ' ')
    .slice(0, 200);
  return text ? ` ("${text}")` : '';
}

/** One line for a refusal: what answered what, and what to check. */
function refusal(target: CommentTarget, request: CommentRequest, answer: { status: number }, words: string): Failure {
  const what = `${target.api} answered ${answer.status} to ${request.method} ${request.path.split('?')[0]}${words}`;
  const hint =
    answer.status === 401
      ? `the token in ${target.tokenName} was not accepted: check that it is set and not expired`
      : answer.status === 403
        ? `the token in ${target.tokenName} may not comment there (${target.api === 'gitlab' ? 'GitLab: a token with the api scope, of a member who may comment' : 'GitHub: the workflow needs "permissions: pull-requests: write"'})`
        : answer.status === 404
          ? `check --repository ${target.repository}, --pull ${target.pull} and --api-url ${target.apiUrl} (a token that cannot see the repository gets 404 too)`
          : 'the host refused the request';
  return { ok: false, code: 'E_COMMENT_REFUSED', message: `${what}: ${hint}` };
}

/** An exchange with one host: each request tried within the bound. */
class Exchange {
  readonly #agent: Agent = deliveryAgent(1);

  constructor(
    readonly target: CommentTarget,
    readonly retry: RetryBound,
    readonly sleep: (ms: number) => Promise<void>,
  ) {}

  /** Sends `request`, tried again within the bound (`tries` of them); a failure is a value. */
  async send(
    request: CommentRequest,
    tries = this.retry.attempts,
  ): Promise<{ status: number; body: string } | Failure> {
    const { target, retry } = this;
    const url = `${target.apiUrl.replace(/\/+$/, '')}${request.path}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${target.token}`,
      accept: target.api === 'gitlab' ? 'application/json' : 'application/vnd.github+json',
      'user-agent': target.userAgent,
      ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
    };
    let last = '';
    for (let attempt = 1; attempt <= tries; attempt += 1) {
      const answer = await requestTo(this.#agent, {
        method: request.method,
        url,
        headers,
        timeoutMs: retry.timeoutMs,
        keepBodyBytes: MAX_ANSWER_BYTES,
        ...(request.body === undefined ? {} : { body: request.body }),
      });
      const limited = rateLimited(answer);
      const verdict = classifyAnswer(answer);
      if (verdict.outcome === 'delivered')
        return { status: verdict.status, body: 'failure' in answer ? '' : (answer.body ?? '') };
      if (verdict.outcome !== 'retry' && !limited)
        return refusal(target, request, answer as { status: number }, hostWords(answer, target.token));
      last = 'failure' in answer ? answer.failure : `answered ${answer.status}${limited ? ' (rate limited)' : ''}`;
      const asked = askedWaitMs(answer, Date.now());
      if (asked !== undefined && asked > retry.maxWaitMs) {
        return {
          ok: false,
          code: 'E_COMMENT_UNAVAILABLE',
          message: `${target.api} ${last} to ${request.method} ${request.path.split('?')[0]} and asks to wait ${Math.ceil(asked / 1000)} s, more than ${retry.maxWaitMs / 1000} s: run the job again later`,
        };
      }
      if (attempt < tries) await this.sleep(backoffDelay(attempt, { baseMs: retry.baseMs, capMs: retry.capMs }, asked));
    }
    return {
      ok: false,
      code: 'E_COMMENT_UNAVAILABLE',
      message: `${target.api} ${last} to ${request.method} ${request.path.split('?')[0]}, ${tries} ${tries === 1 ? 'try' : 'tries'}: the host is unavailable; run the job again later`,
    };
  }

  close(): Promise<void> {
    return this.#agent.destroy().catch(() => undefined);
  }
}

/** The first comment the marker names, read page by page; a listing that could not be read is a failure, never "no comment". */
async function findMarked(
  exchange: Exchange,
  marker: string,
): Promise<{ id: number; body: string } | undefined | Failure> {
  const { api, repository, pull } = exchange.target;
  const seen = new Set<number>();
  for (let page = 1; page <= MAX_PAGES; page += 1) {
    const request = listRequest(api, repository, pull, page);
    const answer = await exchange.send(request);
    if ('ok' in answer) return answer;
    const comments = readCommentPage(answer.body);
    if (!comments)
      return {
        ok: false,
        code: 'E_COMMENT_ANSWER',
        message: `${api} answered ${request.method} ${request.path.split('?')[0]} with something that is not a list of comments: check --api ${api} and --api-url`,
      };
    const mine = comments.find((c) => typeof c.body === 'string' && isMarked(c.body, marker));
    if (mine) return { id: mine.id, body: mine.body! };
    // A host that ignores paging (it answers every page with the same list) has no more pages.
    const fresh = comments.filter((c) => !seen.has(c.id));
    fresh.forEach((c) => seen.add(c.id));
    if (comments.length < COMMENTS_PER_PAGE || fresh.length === 0) return undefined;
  }
  return {
    ok: false,
    code: 'E_COMMENT_ANSWER',
    message: `more than ${MAX_PAGES * COMMENTS_PER_PAGE} comments on ${repository} #${pull}: converge did not find its own among them and adds none`,
  };
}

/** Writes `body` as the marked comment: created when there is none, updated when it differs, left alone when it is the same. */
export async function upsertComment(
  target: CommentTarget,
  body: string,
  marker: string,
  options: { retry?: RetryBound; sleep?: (ms: number) => Promise<void> } = {},
): Promise<CommentResult> {
  const exchange = new Exchange(
    target,
    options.retry ?? DEFAULT_RETRY,
    options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
  );
  try {
    // A create that got no answer may have landed: the comments are read again before the next try, never posted twice blind.
    for (let attempt = 1; ; attempt += 1) {
      const existing = await findMarked(exchange, marker);
      if (existing && 'ok' in existing) return existing;
      if (existing && existing.body === body) return { ok: true, action: 'unchanged', id: existing.id };
      const request = existing
        ? updateRequest(target.api, target.repository, target.pull, existing.id, body)
        : createRequest(target.api, target.repository, target.pull, body);
      const answer = await exchange.send(request, existing ? undefined : 1);
      if ('ok' in answer) {
        if (existing || answer.code !== 'E_COMMENT_UNAVAILABLE' || attempt >= exchange.retry.attempts) return answer;
        await exchange.sleep(backoffDelay(attempt, { baseMs: exchange.retry.baseMs, capMs: exchange.retry.capMs }));
        continue;
      }
      const written = readWritten(answer.body);
      const id = written?.id ?? existing?.id;
      if (id === undefined)
        return {
          ok: false,
          code: 'E_COMMENT_ANSWER',
          message: `${target.api} took ${request.method} ${request.path} but its answer names no comment id`,
        };
      return { ok: true, action: existing ? 'updated' : 'created', id, ...(written?.url ? { url: written.url } : {}) };
    }
  } finally {
    await exchange.close();
  }
}
