// What `converge comment --plan FILE` runs (its flags and --help are in comment.ts, loaded without this).
import { readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { ConvergeError, UsageError } from '../../core/errors.js';
import {
  COMMENT_APIS,
  COMMENT_LIMITS,
  commentBody,
  commentMarker,
  markerKeyProblem,
  type CommentApi,
} from '../../core/notify/pr-comment.js';
import { upsertComment } from '../../notify/pr-comment.js';
import { MARKDOWN_LIMIT, renderMarkdown } from '../../plan/render/markdown.js';
import { shownFrom, shownPlan } from '../paths.js';
import { VERSION } from '../../service/version.js';
import { planCheckOf, readPlanFile } from '../plan-file.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** Bytes of a CI event file read at most (GitHub's pull_request payloads are tens of KiB). */
const MAX_EVENT_BYTES = 10 * 1024 * 1024;

const DEFAULT_TOKEN_ENV: Record<CommentApi, string> = { github: 'GITHUB_TOKEN', gitlab: 'GITLAB_TOKEN' };

function isApi(word: string): word is CommentApi {
  return (COMMENT_APIS as readonly string[]).includes(word);
}

/** The pull request of a GitHub Actions event file: its number and head commit, when the event is about one. */
function eventPull(env: NodeJS.ProcessEnv): { pull?: number; commit?: string } {
  const path = env.GITHUB_EVENT_PATH;
  if (!path) return {};
  let event: {
    pull_request?: { number?: unknown; head?: { sha?: unknown } };
    number?: unknown;
    issue?: { number?: unknown; pull_request?: unknown };
  };
  try {
    if (statSync(path).size > MAX_EVENT_BYTES) throw new Error('too large');
    event = JSON.parse(readFileSync(path, 'utf8')) as typeof event;
  } catch {
    throw new UsageError(`cannot read the event file GITHUB_EVENT_PATH=${path} as JSON; give --pull N`);
  }
  const number = event.pull_request?.number ?? (event.issue?.pull_request ? event.issue.number : undefined);
  const sha = event.pull_request?.head?.sha;
  return {
    ...(typeof number === 'number' ? { pull: number } : {}),
    ...(typeof sha === 'string' ? { commit: sha } : {}),
  };
}

/** Why GitHub's pull request is not known: no event file at all (not a GitHub Actions run), or an event about none. */
function noPullRequest(env: NodeJS.ProcessEnv): string {
  if (!env.GITHUB_EVENT_PATH)
    return 'no pull request: GITHUB_EVENT_PATH is not set (it is set in GitHub Actions runs only); give --pull N';
  return 'no pull request: the event in GITHUB_EVENT_PATH is not about one (run on pull_request), or give --pull N';
}

/** Where the whole plan is, for the comment's last line: the artifact, in the CI run it belongs to. */
function wholePlanAt(api: CommentApi, artifact: string | undefined, planFile: string, env: NodeJS.ProcessEnv): string {
  const name = `\`${(artifact ?? basename(planFile)).replace(/`/g, "'")}\``;
  if (api === 'github' && env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY && env.GITHUB_RUN_ID)
    return `artifact ${name} of ${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`;
  if (api === 'gitlab' && env.CI_JOB_URL) return `artifact ${name} of ${env.CI_JOB_URL}`;
  return artifact === undefined ? `the plan file ${name}` : `artifact ${name}`;
}

function positiveInteger(flag: string, text: string): number {
  if (!/^[1-9]\d{0,9}$/.test(text))
    throw new UsageError(`--${flag} "${text}" is not a pull or merge request number (a whole number from 1)`);
  return Number(text);
}

/** Runs `converge comment --plan FILE`; returns the exit code. */
export async function runCommentCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const env = io.env;
  const values = args.values as Record<string, string | undefined>;
  if (values.plan === undefined)
    throw new UsageError('give the saved plan: --plan FILE (written by "converge plan DIR --out FILE")');
  // The key first (one set but empty is refused before anything else is read or sent).
  const check = planCheckOf(args.values, env);
  const apiWord = values.api ?? 'github';
  if (!isApi(apiWord))
    throw new UsageError(`--api "${apiWord}" is not one of ${COMMENT_APIS.join(', ')} (Gitea takes github)`);
  const api = apiWord;
  if (values.key !== undefined) {
    const problem = markerKeyProblem(values.key);
    if (problem) throw new UsageError(problem);
  }
  const event = api === 'github' && values.pull === undefined ? eventPull(env) : {};
  const repository = values.repository ?? (api === 'github' ? env.GITHUB_REPOSITORY : env.CI_PROJECT_PATH);
  if (!repository)
    throw new UsageError(
      `no repository: give --repository ${api === 'github' ? 'OWNER/NAME (or set GITHUB_REPOSITORY)' : 'GROUP/PROJECT (or set CI_PROJECT_PATH)'}`,
    );
  if (api === 'github' && !/^[^/\s]+\/[^/\s]+$/.test(repository))
    throw new UsageError(`--repository "${repository}" is not OWNER/NAME`);
  const pullText =
    values.pull ??
    (api === 'github' ? (event.pull === undefined ? undefined : String(event.pull)) : env.CI_MERGE_REQUEST_IID);
  if (pullText === undefined) {
    throw new UsageError(
      api === 'github'
        ? noPullRequest(env)
        : 'no merge request: CI_MERGE_REQUEST_IID is set only in merge request pipelines (rules: if: $CI_PIPELINE_SOURCE == "merge_request_event"), or give --pull N',
    );
  }
  const pull = positiveInteger('pull', pullText);
  const apiUrl =
    values['api-url'] ?? (api === 'github' ? (env.GITHUB_API_URL ?? 'https://api.github.com') : env.CI_API_V4_URL);
  if (!apiUrl) throw new UsageError('no GitLab API URL: give --api-url https://HOST/api/v4 (or set CI_API_V4_URL)');
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(apiUrl);
  } catch {
    throw new UsageError(`--api-url "${apiUrl}" is not a URL; give it as https://HOST/PATH`);
  }
  if (parsedUrl.protocol !== 'https:' && parsedUrl.protocol !== 'http:')
    throw new UsageError(`--api-url "${apiUrl}" is not an http(s) URL`);
  const tokenName = values['token-env'] ?? DEFAULT_TOKEN_ENV[api];
  const token = env[tokenName];
  if (!token)
    throw new UsageError(
      `no token: the environment variable ${tokenName} is not set or empty (name another with --token-env NAME)`,
    );

  const planFile = resolve(io.cwd, values.plan);
  // With CONVERGE_PLAN_KEY set, a plan not signed with it is refused, as by plan --show; without it, a signed one is.
  const saved = readPlanFile(planFile, check);
  const marker = commentMarker(values.key);
  const commit = values.commit ?? event.commit ?? (api === 'gitlab' ? env.CI_COMMIT_SHA : undefined);
  const { body, cut } = commentBody(
    { marker, commit, wholePlan: wholePlanAt(api, values.artifact, values.plan, env), limit: COMMENT_LIMITS[api] },
    (limit) => renderMarkdown(shownPlan(saved.plan, shownFrom(saved.manifests.dir)), limit),
    MARKDOWN_LIMIT,
  );

  const result = await upsertComment(
    { api, apiUrl, repository, pull, token, tokenName, userAgent: `converge/${VERSION}` },
    body,
    marker,
  );
  if (!result.ok) throw new ConvergeError(result.code, result.message);
  const where = `${repository}${api === 'gitlab' ? '!' : '#'}${pull}`;
  const said = result.action === 'unchanged' ? 'already says this plan' : result.action;
  io.stdout.write(
    `converge comment: ${api} comment ${result.id} on ${where} ${said}${cut ? ' (the plan cut to fit)' : ''}${result.url ? `: ${result.url}` : ''}\n`,
  );
  return 0;
}
