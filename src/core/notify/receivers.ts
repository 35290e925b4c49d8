// Notification receivers: the `notifications:` list of the config file, checked with file:line:column, and its
// environment variables resolved (URLs and tokens come only from the environment; they never leave the sender).
import { z } from 'zod';
import type { Document, LineCounter } from 'yaml';
import { formatDiagnostic } from '../diagnostics.js';
import { parseDuration } from '../duration.js';
import { UsageError } from '../errors.js';
import { checkHttpUrl } from '../http-url.js';
import { displayPath, issueText } from '../manifest/issues.js';
import { offsetForPath, positionAt } from '../manifest/locate.js';
import { DAEMON_RESOURCE_KIND, NOTIFY_EVENT_TYPES, type NotifyEvent, type NotifyEventType } from './events.js';

const RECEIVER_TYPES = ['webhook', 'slack', 'commit-status'] as const;
type ReceiverType = (typeof RECEIVER_TYPES)[number];

/** A request to a receiver that has not answered after this long fails (and is retried); at most MAX_RECEIVER_TIMEOUT_MS. */
const DEFAULT_RECEIVER_TIMEOUT_MS = 10_000;
const MAX_RECEIVER_TIMEOUT_MS = 60_000;
/** Deliveries in flight to one receiver at once (its own: another receiver's never wait for them), and at most. */
export const DEFAULT_IN_FLIGHT = 2;
const MAX_IN_FLIGHT = 8;
/** Deliveries waiting for one receiver (queued or between retries) at most; past it, its oldest are dropped. */
export const DEFAULT_BACKLOG = 100;
const MAX_BACKLOG = 10_000;
/** Receivers in one config file at most (each has its own queue and worker in Redis). */
const MAX_RECEIVERS = 20;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
  error: 'must be the name of an environment variable (letters, digits, _), not a value',
});
const Duration = z.string().transform((text, ctx) => {
  try {
    const ms = parseDuration(text, 'timeout');
    if (ms > 0 && ms <= MAX_RECEIVER_TIMEOUT_MS) return ms;
    ctx.issues.push({
      code: 'custom',
      input: text,
      message: `timeout: "${text}" is out of range; give more than 0 and at most ${MAX_RECEIVER_TIMEOUT_MS / 1000}s`,
    });
    return z.NEVER;
  } catch (error) {
    ctx.issues.push({ code: 'custom', input: text, message: (error as Error).message });
    return z.NEVER;
  }
});

const Common = {
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, { error: 'must be 1 to 63 letters, digits, ".", "_" or "-"' }),
  events: z.array(z.enum(NOTIFY_EVENT_TYPES)).min(1).optional(),
  resources: z.array(z.string().min(1)).min(1).optional(),
  timeout: Duration.optional(),
  in_flight: z.int().min(1).max(MAX_IN_FLIGHT).optional(),
  backlog: z.int().min(1).max(MAX_BACKLOG).optional(),
};

const ReceiverSchema = z.discriminatedUnion('type', [
  z.strictObject({ ...Common, type: z.literal('webhook'), url_env: EnvName, secret_env: EnvName.optional() }),
  z.strictObject({ ...Common, type: z.literal('slack'), url_env: EnvName }),
  z.strictObject({
    ...Common,
    type: z.literal('commit-status'),
    api_url_env: EnvName,
    token_env: EnvName,
    repository: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/, { error: 'must be owner/name (GitLab: group/subgroup/project)' }),
    api: z.enum(['github', 'gitlab']).optional(),
  }),
]);
const NotificationsSchema = z.array(ReceiverSchema).max(MAX_RECEIVERS);
type ReceiverEntry = z.output<typeof ReceiverSchema>;

/** One receiver as configured: names of environment variables only, never a URL or a token. */
export interface ReceiverConfig {
  name: string;
  type: ReceiverType;
  /** The event types it gets. */
  events: readonly NotifyEventType[];
  /** Name globs (`*` and `?`) of the resources it hears about; undefined: every resource. */
  resources?: readonly string[];
  timeoutMs: number;
  /** Deliveries in flight to this receiver at once (its own slots). */
  inFlight: number;
  /** Deliveries waiting for this receiver at most; past it the oldest are dropped (counted, and a warning). */
  backlog: number;
  /** Environment variables: url (webhook, slack), secret (webhook, optional), apiUrl and token (commit-status). */
  env: { url?: string; secret?: string; apiUrl?: string; token?: string };
  /** commit-status: owner/name, and which API shape (GitHub and Gitea share one; GitLab has its own). */
  repository?: string;
  api?: 'github' | 'gitlab';
}

/** Events a receiver gets when `events:` is absent: every one; write_sent only to commit-status (its pending state). */
function defaultEvents(type: ReceiverType): NotifyEventType[] {
  return type === 'commit-status'
    ? ['write_sent', 'rollout_succeeded', 'rollout_failed', 'write_failed']
    : NOTIFY_EVENT_TYPES.filter((t) => t !== 'write_sent');
}

function toConfig(entry: ReceiverEntry): ReceiverConfig {
  const out: ReceiverConfig = {
    name: entry.name,
    type: entry.type,
    events: entry.events ? [...new Set(entry.events)] : defaultEvents(entry.type),
    timeoutMs: entry.timeout ?? DEFAULT_RECEIVER_TIMEOUT_MS,
    inFlight: entry.in_flight ?? DEFAULT_IN_FLIGHT,
    backlog: entry.backlog ?? DEFAULT_BACKLOG,
    env: {},
  };
  if (entry.resources) out.resources = entry.resources;
  if (entry.type === 'commit-status') {
    out.env = { apiUrl: entry.api_url_env, token: entry.token_env };
    out.repository = entry.repository;
    out.api = entry.api ?? 'github';
  } else {
    out.env = { url: entry.url_env };
    if (entry.type === 'webhook' && entry.secret_env) out.env.secret = entry.secret_env;
  }
  return out;
}

/** A problem's text; a `type:` that names no receiver kind is said so (zod reports it on the union). */
function receiverIssueText(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== 'invalid_union') return issueText(issue);
  const type = (issue.input as { type?: unknown } | undefined)?.type;
  const kinds = RECEIVER_TYPES.map((t) => `"${t}"`).join(', ');
  if (type === undefined) return `type is required: one of ${kinds}`;
  return `${typeof type === 'string' && type.length <= 40 ? JSON.stringify(type) : 'the value'} is not one of ${kinds}`;
}

/** An unknown key, with the way to give a URL or a token (environment variables only). */
function unknownKey(key: string): string {
  const secret = ['url', 'secret', 'api_url', 'token'].includes(key);
  return `unknown key "${key}"${secret ? `; URLs and tokens come from the environment: name the variable with ${key}_env` : ''}; known: name, type, url_env, secret_env, api_url_env, token_env, repository, api, events, resources, timeout, in_flight, backlog`;
}

/** One line per problem: `file:line:column: error: notifications[1].url_env: is required`. */
function located(
  doc: Document,
  lines: LineCounter,
  file: string,
  path: ReadonlyArray<PropertyKey>,
  message: string,
  at: 'key' | 'value' = 'value',
): string {
  const { line, column } = positionAt(lines, offsetForPath(doc, ['notifications', ...path], at));
  return formatDiagnostic({
    severity: 'error',
    file,
    line,
    column,
    message: `${displayPath(['notifications', ...path])}: ${message}`,
  });
}

/**
 * The `notifications:` list of a parsed config file. Throws UsageError with one `file:line:column` line per problem
 * (an unknown key, a missing one, a duplicate name, a bad event or duration).
 */
export function notificationsFromConfig(doc: Document, lines: LineCounter, file: string): ReceiverConfig[] {
  const data: unknown = doc.get('notifications');
  if (data === undefined || data === null) return [];
  const root: unknown = doc.toJS();
  const list = typeof root === 'object' && root !== null && 'notifications' in root ? root.notifications : undefined;
  const parsed = NotificationsSchema.safeParse(list, { error: receiverIssueText });
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues.slice(0, 20)) {
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys)
          problems.push(located(doc, lines, file, [...issue.path, key], unknownKey(key), 'key'));
      } else {
        problems.push(located(doc, lines, file, issue.path, issue.message));
      }
    }
    throw new UsageError(problems.join('\n'));
  }
  const seen = new Set<string>();
  parsed.data.forEach((entry, i) => {
    if (seen.has(entry.name))
      problems.push(
        located(
          doc,
          lines,
          file,
          [i, 'name'],
          `"${entry.name}" is used by an earlier receiver; give each a name of its own`,
        ),
      );
    seen.add(entry.name);
  });
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  return parsed.data.map(toConfig);
}

/** A receiver with its environment read: holds secrets (URLs and tokens), so only the sender keeps it. */
export interface ResolvedReceiver extends ReceiverConfig {
  url?: string;
  secret?: string;
  apiUrl?: string;
  token?: string;
}

/** Where a receiver's credentials go instead of its URL. */
const CREDENTIALS_HOME: Record<ReceiverType, string> = {
  webhook: 'sign with secret_env (X-Converge-Signature-256) instead; the receiver checks the signature',
  slack: 'a Slack webhook URL carries its token in its path, with no user name or password; give the URL Slack shows',
  'commit-status': 'give the token with token_env instead',
};

/**
 * Why the URL a receiver's variable holds is refused (it does not parse, is not http(s), or carries a user name or
 * password, which would be dropped or leak into logs), or undefined when it is usable. The value is never echoed.
 */
function urlProblem(receiver: ReceiverConfig, field: 'url' | 'apiUrl', value: string | undefined): string | undefined {
  if (!value) return undefined;
  const setting = field === 'url' ? 'url_env' : 'api_url_env';
  const name = `notifications: receiver "${receiver.name}" (${receiver.type}): ${setting} ${receiver.env[field]}`;
  try {
    checkHttpUrl(value, {
      name,
      example: 'https://HOST/PATH',
      noCredentials: CREDENTIALS_HOME[receiver.type],
      secretValue: true,
    });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Reads each receiver's variables; a missing or empty one is one line naming it (never its value). */
export function resolveReceivers(
  receivers: readonly ReceiverConfig[],
  env: Readonly<Record<string, string | undefined>>,
): ResolvedReceiver[] {
  const missing: string[] = [];
  const out = receivers.map((receiver) => {
    const resolved: ResolvedReceiver = { ...receiver };
    for (const [field, variable] of Object.entries(receiver.env) as Array<[keyof ReceiverConfig['env'], string]>) {
      const value = env[variable];
      if (!value)
        missing.push(
          `notifications: receiver "${receiver.name}" (${receiver.type}): environment variable ${variable} is not set`,
        );
      else resolved[field] = value;
    }
    for (const field of ['url', 'apiUrl'] as const) {
      const problem = urlProblem(receiver, field, resolved[field]);
      if (problem) missing.push(problem);
    }
    return resolved;
  });
  if (missing.length > 0) throw new UsageError(missing.join('\n'));
  return out;
}

/** `support-*` matches support-agent; `?` is one character; everything else is literal. */
export function globMatches(glob: string, name: string): boolean {
  const pattern = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${pattern}$`).test(name);
}

/** Whether a receiver gets this event: its type is asked for, and its resource matches a glob (daemon-wide events always). */
export function receiverWants(
  receiver: Pick<ReceiverConfig, 'events' | 'resources'>,
  event: Pick<NotifyEvent, 'type' | 'resource'>,
): boolean {
  if (!(receiver.events as readonly string[]).includes(event.type)) return false;
  if (!receiver.resources || event.resource.kind === DAEMON_RESOURCE_KIND) return true;
  return receiver.resources.some((glob) => globMatches(glob, event.resource.name));
}
