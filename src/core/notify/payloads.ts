// The request each receiver kind gets for one event (webhook JSON and its signature, Slack blocks, commit status): data only.
import { createHmac } from 'node:crypto';
import { versionLabel } from '../manifest-version.js';
import type { NotifyEvent } from './events.js';

/** The webhook body (docs/notifications.md): snake_case, stable field order. */
export function webhookBody(event: NotifyEvent, buildLog?: readonly string[]): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    resource: { kind: event.resource.kind, name: event.resource.name },
    reason: event.reason,
    message: event.message,
    ...(event.revisionId ? { revision_id: event.revisionId } : {}),
    ...(event.revisionStatus ? { revision_status: event.revisionStatus } : {}),
    manifest_version: event.manifestVersion
      ? {
          kind: event.manifestVersion.kind,
          id: event.manifestVersion.id,
          ...(event.manifestVersion.uncommitted ? { uncommitted: true } : {}),
        }
      : null,
    ...(buildLog && buildLog.length > 0 ? { build_log: buildLog } : {}),
    time: event.time,
  });
}

/** `sha256=<hex HMAC-SHA256 of the body with the secret>` (the X-Converge-Signature-256 header). */
export function signature(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

const EMOJI: Record<string, string> = {
  rollout_succeeded: ':white_check_mark:',
  rollout_failed: ':x:',
  drift_detected: ':warning:',
  drift_healed: ':adhesive_bandage:',
  conflict: ':no_entry:',
  held: ':double_vertical_bar:',
  applied_state_lost: ':rotating_light:',
  pruned: ':wastebasket:',
  delete_pending: ':hourglass:',
  write_failed: ':x:',
  write_sent: ':arrow_up:',
  test: ':wave:',
};

/** Slack mrkdwn escaping of text converge did not write (names, messages, log lines). */
function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A Slack incoming-webhook body: `text` (notifications, fallbacks) and `blocks` (the readable message). */
export function slackBody(event: NotifyEvent, buildLog?: readonly string[]): string {
  const subject = `${event.resource.kind}/${event.resource.name}`;
  const text = `${EMOJI[event.type] ?? ''} converge: ${event.type} ${subject}: ${event.message}`.trim();
  const facts = [
    `*reason* ${escapeSlack(event.reason)}`,
    ...(event.revisionId
      ? [
          `*revision* \`${escapeSlack(event.revisionId)}\`${event.revisionStatus ? ` ${escapeSlack(event.revisionStatus)}` : ''}`,
        ]
      : []),
    `*manifests* ${event.manifestVersion ? escapeSlack(versionLabel(event.manifestVersion)) : 'unknown'}`,
  ];
  const blocks: unknown[] = [
    {
      type: 'header',
      text: { type: 'plain_text', text: `${event.type.replace(/_/g, ' ')}: ${subject}`.slice(0, 150) },
    },
    { type: 'section', text: { type: 'mrkdwn', text: escapeSlack(event.message).slice(0, 2900) } },
    { type: 'context', elements: facts.map((f) => ({ type: 'mrkdwn', text: f })) },
  ];
  if (buildLog && buildLog.length > 0) {
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: `\`\`\`${escapeSlack(buildLog.join('\n')).slice(-2800)}\`\`\`` },
    });
  }
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `delivery ${event.id} · ${event.time}` }] });
  return JSON.stringify({ text, blocks });
}

type CommitState = 'pending' | 'success' | 'failure';

/** What a commit status says for an event, or undefined when the event sets none. */
export function commitStateOf(event: Pick<NotifyEvent, 'type' | 'rollout'>): CommitState | undefined {
  switch (event.type) {
    case 'write_sent':
      return event.rollout ? 'pending' : 'success';
    case 'rollout_succeeded':
    case 'test':
      return 'success';
    case 'rollout_failed':
    case 'write_failed':
      return 'failure';
    default:
      return undefined;
  }
}

/** The commit the event's desired state was read from, when it was read from git. */
export function commitOf(event: Pick<NotifyEvent, 'manifestVersion'>): string | undefined {
  const version = event.manifestVersion;
  return version?.kind === 'git' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(version.id) ? version.id : undefined;
}

/** GitHub (and Gitea's) description limit; GitLab takes longer ones, cut the same way. */
export const COMMIT_DESCRIPTION_MAX = 140;

function describe(event: NotifyEvent, state: CommitState): string {
  const text =
    state === 'pending'
      ? `${event.resource.name}: rollout started${event.revisionId ? ` (revision ${event.revisionId})` : ''}`
      : `${event.resource.name}: ${event.message}`;
  return text.length > COMMIT_DESCRIPTION_MAX ? `${text.slice(0, COMMIT_DESCRIPTION_MAX - 1)}…` : text;
}

/** A commit status request: the path under the API base, and its JSON body (GitHub/Gitea shape, or GitLab's). */
export function commitStatusRequest(
  event: NotifyEvent,
  repository: string,
  api: 'github' | 'gitlab',
  sha: string,
  state: CommitState,
): { path: string; body: string } {
  const context = `converge/${event.resource.name}`;
  const description = describe(event, state);
  if (api === 'gitlab') {
    const gitlabState = state === 'failure' ? 'failed' : state;
    return {
      path: `/projects/${encodeURIComponent(repository)}/statuses/${sha}`,
      body: JSON.stringify({ state: gitlabState, name: context, description }),
    };
  }
  const [owner, ...rest] = repository.split('/');
  return {
    path: `/repos/${encodeURIComponent(owner!)}/${rest.map(encodeURIComponent).join('/')}/statuses/${sha}`,
    body: JSON.stringify({ state, context, description }),
  };
}
