// `converge comment --plan FILE`: the saved plan as one comment on a pull or merge request, updated in place on every later run (docs/pull-requests.md).
import { COMMENT_APIS } from '../../core/notify/pr-comment.js';
import type { Command } from '../command.js';
import { SKIP_SIGNATURE_OPTION } from '../plan-file.js';
import { COMMAND_SUMMARIES } from './summaries.js';
const DETAILS = `Renders the saved plan as "converge plan --show FILE --output markdown" does and posts it as one comment whose
first line is a hidden marker (<!-- converge-plan -->); a later run finds that comment and updates it (nothing is sent
when it already says the same). A plan longer than the host takes in a comment (GitHub 65,536 characters, GitLab
1,000,000) is cut to fit, with a line that says where the whole plan is (--artifact).
Defaults come from the CI's own variables: GitHub Actions (and Gitea Actions) GITHUB_REPOSITORY, the pull request of
the event file GITHUB_EVENT_PATH, GITHUB_API_URL; GitLab CI CI_PROJECT_PATH, CI_MERGE_REQUEST_IID, CI_API_V4_URL.
The token is read from the variable --token-env names and sent only as the Authorization header.
Exit 0: the comment was written or already said this; exit 1: one line says why (the host refused: 401, 403, 404;
or it stayed unavailable after retries of 5xx answers and rate limits, about a minute at most).`;

export const commentCommand: Command = {
  name: 'comment',
  summary: COMMAND_SUMMARIES.comment,
  usage:
    'converge comment --plan FILE [--api github|gitlab] [--repository OWNER/NAME] [--pull N] [--api-url URL] [--token-env NAME] [--key NAME] [--artifact NAME] [--skip-signature-check]',
  details: DETAILS,
  positionals: [0, 0],
  options: {
    plan: {
      type: 'string',
      placeholder: 'FILE',
      description: 'the saved plan to post (written by "converge plan --out FILE")',
    },
    api: {
      type: 'string',
      placeholder: 'API',
      choices: COMMENT_APIS,
      description: 'github (default; Gitea too) or gitlab',
    },
    repository: {
      type: 'string',
      placeholder: 'OWNER/NAME',
      description: 'the repository (GitLab: the project path); default GITHUB_REPOSITORY or CI_PROJECT_PATH',
    },
    pull: {
      type: 'string',
      placeholder: 'N',
      description:
        'the pull request number (GitLab: the merge request iid); default from GITHUB_EVENT_PATH or CI_MERGE_REQUEST_IID',
    },
    'api-url': {
      type: 'string',
      placeholder: 'URL',
      description: "the host's API base URL; default GITHUB_API_URL (else https://api.github.com) or CI_API_V4_URL",
    },
    'token-env': {
      type: 'string',
      placeholder: 'NAME',
      description: 'the environment variable that holds the token (default GITHUB_TOKEN, or GITLAB_TOKEN for gitlab)',
    },
    key: {
      type: 'string',
      placeholder: 'NAME',
      description: 'one comment per key on the same request (several manifest directories); default: one comment',
    },
    artifact: {
      type: 'string',
      placeholder: 'NAME',
      description:
        "where the whole plan is kept (the CI artifact's name), said by the comment; default the plan file's name",
    },
    ...SKIP_SIGNATURE_OPTION,
    commit: {
      type: 'string',
      placeholder: 'SHA',
      description:
        "the commit the plan was made at, shown in the comment; default the pull request's head or CI_COMMIT_SHA",
    },
  },
  run: async (args, io) => (await import('./comment-run.js')).runCommentCommand(args, io),
};
