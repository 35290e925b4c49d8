// The plan comment on a pull or merge request (docs/pull-requests.md): its hidden marker, its body cut to the host's limit, and each host's requests: data only.
import { z } from 'zod';

/** Which comment API: GitHub's (Gitea shares it) or GitLab's merge request notes. */
export type CommentApi = 'github' | 'gitlab';
export const COMMENT_APIS = ['github', 'gitlab'] as const;

/**
 * The longest body each host stores, in characters: GitHub refuses a longer comment ("body is too long (maximum is
 * 65536 characters)"); GitLab limits a note to 1,000,000 characters (docs/pull-requests.md cites both). A JavaScript
 * string's length counts UTF-16 units, never fewer than the characters, so a body within it is within the host's.
 */
export const COMMENT_LIMITS: Record<CommentApi, number> = { github: 65_536, gitlab: 1_000_000 };

/** The first line of the comment converge keeps: `<!-- converge-plan -->`, or `<!-- converge-plan: KEY -->` for one of several plans of a request. */
export function commentMarker(key?: string): string {
  return key === undefined ? '<!-- converge-plan -->' : `<!-- converge-plan: ${key} -->`;
}

/** A key for the marker: letters, digits and `._/-`, so it can never end the HTML comment early. */
export function markerKeyProblem(key: string): string | undefined {
  return /^[A-Za-z0-9._/-]{1,100}$/.test(key)
    ? undefined
    : `--key "${key}" may hold only letters, digits, ".", "_", "/" and "-" (at most 100)`;
}

/** Whether a comment is the one this marker names: its first line is the marker. */
export function isMarked(body: string, marker: string): boolean {
  return body === marker || body.startsWith(`${marker}\n`) || body.startsWith(`${marker}\r\n`);
}

export interface CommentParts {
  marker: string;
  /** The commit the plan was made at (shown shortened), when known. */
  commit?: string | undefined;
  /** Where the whole plan is, for the line a cut comment ends with (an artifact's name and the run's URL). */
  wholePlan: string;
  /** The host's limit on a body, in characters. */
  limit: number;
}

/** The plan's markdown within `limit` characters (renderMarkdown of src/plan/render/markdown.ts, handed in: core cannot import plan). */
export type RenderWithin = (limit: number) => string;

/** The comment's body, and whether the plan in it was cut. */
export interface CommentBody {
  body: string;
  cut: boolean;
}

/**
 * The comment's body: the marker, a header, the plan as `plan --show --output markdown` prints it (at most `shown`
 * characters, the renderer's own limit), and a last line. A plan the renderer or the host's limit cuts (the renderer
 * drops field details, then rows, at a smaller limit) gets a line that says where the whole plan is.
 */
export function commentBody(parts: CommentParts, render: RenderWithin, shown: number): CommentBody {
  const header = `${parts.marker}\n### converge plan${parts.commit ? ` for \`${parts.commit.slice(0, 12)}\`` : ''}\n\n`;
  const cutLine = `\n**This comment holds part of the plan** (at most ${parts.limit.toLocaleString('en-US')} characters fit in a comment here). The whole plan: ${parts.wholePlan}.\n`;
  const lastLine = `\nAfter the merge, \`converge apply --plan\` applies exactly this plan (${parts.wholePlan}), or refuses it as stale.\n`;
  const budget = Math.max(0, Math.min(shown, parts.limit - header.length - cutLine.length - lastLine.length));
  // The comment's header is the plan's heading: the renderer's own is left out, so the comment has it once.
  const plan = (limit: number) => withoutHeading(render(limit + PLAN_HEADING.length));
  const full = plan(shown);
  const cut = full.length > budget || plan(Number.MAX_SAFE_INTEGER - PLAN_HEADING.length).length > full.length;
  if (!cut) return { body: `${header}${full}${lastLine}`, cut };
  const within = cutAtLine(full.length <= budget ? full : plan(budget), budget);
  return { body: `${header}${within}${cutLine}${lastLine}`, cut };
}

/** The first line of the plan's markdown (src/plan/render/markdown.ts), followed by its blank line. */
const PLAN_HEADING = '### converge plan\n\n';

/** The plan's markdown without its heading, which the comment's header stands for. */
function withoutHeading(markdown: string): string {
  return markdown.startsWith(PLAN_HEADING) ? markdown.slice(PLAN_HEADING.length) : markdown;
}

/** Text within `limit` characters, cut after a whole line, an open code fence closed. */
function cutAtLine(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const kept = text.slice(0, Math.max(0, text.lastIndexOf('\n', limit - 5) + 1));
  const fences = kept.split('\n').filter((line) => /^\s*(```|~~~)/.test(line)).length;
  return fences % 2 === 1 ? `${kept}\`\`\`\n` : kept;
}

/** One request of the comment's exchange: its method, its path under the API base URL, its JSON body. */
export interface CommentRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  path: string;
  body?: string;
}

/** Comments read per page when looking for the marked one (the most either host gives). */
export const COMMENTS_PER_PAGE = 100;

function repoPath(api: CommentApi, repository: string): string {
  if (api === 'gitlab') return `/projects/${encodeURIComponent(repository)}`;
  const [owner, ...rest] = repository.split('/');
  return `/repos/${encodeURIComponent(owner!)}/${rest.map(encodeURIComponent).join('/')}`;
}

/** A page (from 1) of the request's comments, oldest first. */
export function listRequest(api: CommentApi, repository: string, pull: number, page: number): CommentRequest {
  const base = repoPath(api, repository);
  if (api === 'gitlab')
    return {
      method: 'GET',
      path: `${base}/merge_requests/${pull}/notes?sort=asc&order_by=created_at&per_page=${COMMENTS_PER_PAGE}&page=${page}`,
    };
  return { method: 'GET', path: `${base}/issues/${pull}/comments?per_page=${COMMENTS_PER_PAGE}&page=${page}` };
}

/** A new comment on the request. */
export function createRequest(api: CommentApi, repository: string, pull: number, body: string): CommentRequest {
  const base = repoPath(api, repository);
  return {
    method: 'POST',
    path: api === 'gitlab' ? `${base}/merge_requests/${pull}/notes` : `${base}/issues/${pull}/comments`,
    body: JSON.stringify({ body }),
  };
}

/** The marked comment, its body replaced. */
export function updateRequest(
  api: CommentApi,
  repository: string,
  pull: number,
  id: number,
  body: string,
): CommentRequest {
  const base = repoPath(api, repository);
  if (api === 'gitlab')
    return { method: 'PUT', path: `${base}/merge_requests/${pull}/notes/${id}`, body: JSON.stringify({ body }) };
  return { method: 'PATCH', path: `${base}/issues/comments/${id}`, body: JSON.stringify({ body }) };
}

/** One comment as either host lists it: its id and body; GitLab's system notes (pushes, approvals) are not comments. */
const ListedComment = z.object({
  id: z.number().int(),
  body: z.string().nullish(),
  system: z.boolean().optional(),
  html_url: z.string().optional(),
});
const ListedComments = z.array(ListedComment);
export type ListedComment = z.infer<typeof ListedComment>;

/** A page of comments, or undefined when the answer is not a list of comments. */
export function readCommentPage(text: string): ListedComment[] | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = ListedComments.safeParse(data);
  return parsed.success ? parsed.data.filter((c) => c.system !== true) : undefined;
}

/** The id (and address, when the host gives one) of a comment the host just wrote, or undefined. */
export function readWritten(text: string): { id: number; url?: string } | undefined {
  try {
    const parsed = ListedComment.safeParse(JSON.parse(text));
    return parsed.success
      ? { id: parsed.data.id, ...(parsed.data.html_url ? { url: parsed.data.html_url } : {}) }
      : undefined;
  } catch {
    return undefined;
  }
}
