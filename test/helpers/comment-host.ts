// A pull-request comment API on loopback for the tests, in GitHub's shape (Gitea's too) or GitLab's merge request notes: comments kept in memory, the token checked, answers overridden as the test says.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HostRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** An answer the test puts in place of the host's own for the next request that matches. */
export interface Override {
  method?: string;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface CommentHost {
  /** The API base URL (GitHub: the host root; GitLab: .../api/v4). */
  apiUrl: string;
  requests: HostRequest[];
  comments: Array<{ id: number; body: string; system?: boolean }>;
  /** Answers for the next matching requests, used once each, in order. */
  overrides: Override[];
  /** Requests that wrote (POST, PATCH, PUT) and were answered 2xx. */
  writes(): HostRequest[];
  close(): Promise<void>;
}

/**
 * A host of `shape` with one repository (`owner/name`, GitLab: its project path) and one pull request `pull`, taking
 * `token` as a Bearer token. `otherComments` are there before the test's (someone else's).
 */
export async function startCommentHost(
  shape: 'github' | 'gitlab',
  options: { repository: string; pull: number; token: string; otherComments?: string[] },
): Promise<CommentHost> {
  const requests: HostRequest[] = [];
  const comments: CommentHost['comments'] = [];
  const overrides: Override[] = [];
  let nextId = 1000;
  for (const body of options.otherComments ?? []) comments.push({ id: nextId++, body });
  if (shape === 'gitlab') comments.push({ id: nextId++, body: 'added 1 commit', system: true });
  const [owner, name] = options.repository.split('/');
  const prefix =
    shape === 'gitlab'
      ? `/api/v4/projects/${encodeURIComponent(options.repository)}/merge_requests/${options.pull}/notes`
      : `/repos/${owner}/${name}/issues`;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const method = req.method ?? '';
      const url = new URL(req.url ?? '/', 'http://host');
      const answer = (status: number, data: unknown, headers: Record<string, string> = {}) => {
        requests.push({ method, path: `${url.pathname}${url.search}`, headers: req.headers, body, status });
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(data));
      };
      const override = overrides.findIndex((o) => o.method === undefined || o.method === method);
      if (override >= 0) {
        const [o] = overrides.splice(override, 1);
        return answer(o!.status, o!.body ?? { message: `answered ${o!.status} by the test` }, o!.headers);
      }
      if (req.headers.authorization !== `Bearer ${options.token}`) return answer(401, { message: 'Bad credentials' });
      const page = Number(url.searchParams.get('page') ?? '1');
      const perPage = Number(url.searchParams.get('per_page') ?? '30');
      const listed = (list: typeof comments) => list.slice((page - 1) * perPage, page * perPage);
      if (shape === 'github') {
        if (method === 'GET' && url.pathname === `${prefix}/${options.pull}/comments`)
          return answer(
            200,
            listed(comments).map((c) => ({ id: c.id, body: c.body, user: { type: 'Bot' } })),
          );
        if (method === 'POST' && url.pathname === `${prefix}/${options.pull}/comments`) {
          const comment = { id: nextId++, body: (JSON.parse(body) as { body: string }).body };
          comments.push(comment);
          return answer(201, {
            ...comment,
            html_url: `https://github.example/${options.repository}/pull/${options.pull}#issuecomment-${comment.id}`,
          });
        }
        const match = /\/comments\/(\d+)$/.exec(url.pathname);
        if (method === 'PATCH' && match && url.pathname === `${prefix}/comments/${match[1]}`) {
          const comment = comments.find((c) => c.id === Number(match[1]));
          if (!comment) return answer(404, { message: 'Not Found' });
          comment.body = (JSON.parse(body) as { body: string }).body;
          return answer(200, comment);
        }
        return answer(404, { message: 'Not Found' });
      }
      if (method === 'GET' && url.pathname === prefix)
        return answer(
          200,
          listed(comments).map((c) => ({ id: c.id, body: c.body, system: c.system === true })),
        );
      if (method === 'POST' && url.pathname === prefix) {
        const comment = { id: nextId++, body: (JSON.parse(body) as { body: string }).body };
        comments.push(comment);
        return answer(201, { ...comment, system: false });
      }
      const match = /\/notes\/(\d+)$/.exec(url.pathname);
      if (method === 'PUT' && match && url.pathname === `${prefix}/${match[1]}`) {
        const comment = comments.find((c) => c.id === Number(match[1]));
        if (!comment) return answer(404, { message: '404 Not found' });
        comment.body = (JSON.parse(body) as { body: string }).body;
        return answer(200, { ...comment, system: false });
      }
      return answer(404, { message: '404 Not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    apiUrl: `http://127.0.0.1:${port}${shape === 'gitlab' ? '/api/v4' : ''}`,
    requests,
    comments,
    overrides,
    writes: () => requests.filter((r) => r.method !== 'GET' && r.status < 300),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
