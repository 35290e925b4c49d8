import { describe, expect, it } from 'vitest';
import {
  COMMENT_LIMITS,
  commentBody,
  commentMarker,
  createRequest,
  isMarked,
  listRequest,
  markerKeyProblem,
  readCommentPage,
  updateRequest,
} from './pr-comment.js';

/** A stand-in for renderMarkdown: `rows` table rows, as many as fit in `limit` (the real one drops details, then rows). */
function rowsRenderer(rows: number): (limit: number) => string {
  return (limit) => {
    const lines = ['| action | resource |', '|---|---|'];
    let length = lines.join('\n').length + 1;
    for (let i = 0; i < rows; i += 1) {
      const next = `| update | Deployment/api-${i} |`;
      if (length + next.length + 1 > limit) break;
      lines.push(next);
      length += next.length + 1;
    }
    return `${lines.join('\n')}\n`;
  };
}

describe('the plan comment', () => {
  it('starts with its marker, shows the commit and says what apply does with the plan', () => {
    const { body, cut } = commentBody(
      {
        marker: commentMarker(),
        commit: 'a'.repeat(40),
        wholePlan: 'artifact `converge.plan`',
        limit: COMMENT_LIMITS.github,
      },
      rowsRenderer(3),
      60_000,
    );
    expect(cut).toBe(false);
    expect(body.split('\n')[0]).toBe('<!-- converge-plan -->');
    expect(isMarked(body, commentMarker())).toBe(true);
    expect(isMarked(body, commentMarker('staging'))).toBe(false);
    expect(body).toContain('### converge plan for `aaaaaaaaaaaa`');
    expect(body).toContain('Deployment/api-2');
    expect(body).toMatch(/applies exactly this plan \(artifact `converge.plan`\)/);
    expect(body).not.toContain('holds part of the plan');
  });

  it("has the heading once: the renderer's own heading gives way to the comment's, with or without a commit", () => {
    const rendered = (limit: number) => `### converge plan\n\n${rowsRenderer(3)(limit - 19)}`;
    for (const commit of [undefined, 'b'.repeat(40)]) {
      const { body } = commentBody(
        {
          marker: commentMarker(),
          ...(commit ? { commit } : {}),
          wholePlan: 'the plan file `p`',
          limit: COMMENT_LIMITS.github,
        },
        rendered,
        60_000,
      );
      expect(body.match(/### converge plan/g)).toHaveLength(1);
      expect(body).toContain(
        commit
          ? '### converge plan for `bbbbbbbbbbbb`\n\n| action | resource |'
          : '### converge plan\n\n| action | resource |',
      );
    }
  });

  it('a plan longer than the host takes is cut to fit, with a line that says where the whole plan is', () => {
    const limit = 2_000;
    const { body, cut } = commentBody(
      { marker: commentMarker(), wholePlan: 'artifact `converge-plan-abc` of https://ci.example/runs/9', limit },
      rowsRenderer(500),
      60_000,
    );
    expect(cut).toBe(true);
    expect(body.length).toBeLessThanOrEqual(limit);
    expect(body).toContain('Deployment/api-0');
    expect(body).not.toContain('Deployment/api-499');
    expect(body).toContain(
      '**This comment holds part of the plan** (at most 2,000 characters fit in a comment here). The whole plan: artifact `converge-plan-abc` of https://ci.example/runs/9.',
    );
  });

  it('a plan the renderer itself cut at its own limit says where the whole plan is too', () => {
    const { body, cut } = commentBody(
      { marker: commentMarker(), wholePlan: 'the plan file `p`', limit: COMMENT_LIMITS.gitlab },
      rowsRenderer(5_000),
      60_000,
    );
    expect(cut).toBe(true);
    expect(body.length).toBeLessThan(61_000);
    expect(body).toContain('The whole plan: the plan file `p`.');
  });

  it('a marker key cannot end the HTML comment early', () => {
    expect(markerKeyProblem('staging/eu-1')).toBeUndefined();
    expect(markerKeyProblem('x -->')).toMatch(/may hold only/);
    expect(commentMarker('staging')).toBe('<!-- converge-plan: staging -->');
  });

  it("each host's requests: GitHub's issue comments, GitLab's merge request notes", () => {
    expect(listRequest('github', 'acme/app', 7, 2).path).toBe('/repos/acme/app/issues/7/comments?per_page=100&page=2');
    expect(createRequest('github', 'acme/app', 7, 'b')).toEqual({
      method: 'POST',
      path: '/repos/acme/app/issues/7/comments',
      body: '{"body":"b"}',
    });
    expect(updateRequest('github', 'acme/app', 7, 55, 'b')).toEqual({
      method: 'PATCH',
      path: '/repos/acme/app/issues/comments/55',
      body: '{"body":"b"}',
    });
    expect(listRequest('gitlab', 'group/sub/app', 3, 1).path).toBe(
      '/projects/group%2Fsub%2Fapp/merge_requests/3/notes?sort=asc&order_by=created_at&per_page=100&page=1',
    );
    expect(updateRequest('gitlab', 'group/app', 3, 9, 'b')).toEqual({
      method: 'PUT',
      path: '/projects/group%2Fapp/merge_requests/3/notes/9',
      body: '{"body":"b"}',
    });
  });

  it('reads a page of comments, leaving out GitLab system notes; anything else is no page', () => {
    expect(
      readCommentPage('[{"id":1,"body":"a"},{"id":2,"body":"pushed","system":true},{"id":3,"body":null}]'),
    ).toEqual([
      { id: 1, body: 'a' },
      { id: 3, body: null },
    ]);
    expect(readCommentPage('{"message":"nope"}')).toBeUndefined();
    expect(readCommentPage('<html>')).toBeUndefined();
  });
});
