// The sender of notifications: holds the receivers' URLs and secrets, builds each kind's request, and classifies the answer.
import type { Agent } from 'undici';
import {
  eventId,
  TEST_EVENT_TYPE,
  type BuildLogReader,
  type Deliver,
  type DeliveryAnswer,
  type NotifyEvent,
} from '../core/notify/events.js';
import {
  commitOf,
  commitStateOf,
  commitStatusRequest,
  signature,
  slackBody,
  webhookBody,
} from '../core/notify/payloads.js';
import type { ResolvedReceiver } from '../core/notify/receivers.js';
import { deliveryAgent, postTo, type PostAnswer } from './post.js';

/** Build log lines sent with a failed rollout at most (the last ones). */
const BUILD_LOG_LINES = 20;

export interface SenderOptions {
  /** Reads the last build log lines of a failed revision, when the service has them (optional; injected by the CLI). */
  buildLogs?: BuildLogReader | undefined;
  /** The User-Agent header (converge/<version>). */
  userAgent: string;
}

export interface Sender {
  deliver: Deliver;
  /** The receivers' names and kinds (for logs: never a URL). */
  readonly receivers: ReadonlyArray<Pick<ResolvedReceiver, 'name' | 'type'>>;
  close(): Promise<void>;
}

/** 2xx delivered; 408, 429 and 5xx (and no answer) retried; any other status refused for good. */
export function classifyAnswer(answer: PostAnswer): DeliveryAnswer {
  if ('failure' in answer) return { outcome: 'retry', detail: answer.failure };
  const { status } = answer;
  if (status >= 200 && status < 300) return { outcome: 'delivered', status };
  if (status === 408 || status === 429 || status >= 500) return { outcome: 'retry', detail: `answered ${status}` };
  return { outcome: 'rejected', detail: `answered ${status}` };
}

/** The last build log lines of a failed rollout, within the receiver's timeout; none when unknown or unreadable. */
async function buildLogOf(
  event: NotifyEvent,
  read: BuildLogReader | undefined,
  timeoutMs: number,
): Promise<string[] | undefined> {
  if (!read || event.type !== 'rollout_failed' || !event.deploymentId || !event.revisionId) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const lines = await Promise.race([
      read(event.deploymentId, event.revisionId),
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs))),
    ]);
    return lines?.slice(-BUILD_LOG_LINES);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** The request for one receiver, or why there is none (a commit status without a git commit or a state). */
async function requestFor(
  receiver: ResolvedReceiver,
  event: NotifyEvent,
  options: SenderOptions,
): Promise<{ url: string; body: string; headers: Record<string, string> } | { skip: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': options.userAgent };
  if (receiver.type === 'commit-status') {
    const state = commitStateOf(event);
    if (!state) return { skip: `${event.type} sets no commit status` };
    const sha = commitOf(event);
    if (!sha) return { skip: 'the manifests are not read from a git commit' };
    const request = commitStatusRequest(event, receiver.repository!, receiver.api ?? 'github', sha, state);
    headers.authorization = `Bearer ${receiver.token!}`;
    headers.accept = receiver.api === 'gitlab' ? 'application/json' : 'application/vnd.github+json';
    return { url: `${receiver.apiUrl!.replace(/\/+$/, '')}${request.path}`, body: request.body, headers };
  }
  const log = await buildLogOf(event, options.buildLogs, receiver.timeoutMs);
  if (receiver.type === 'slack') return { url: receiver.url!, body: slackBody(event, log), headers };
  const body = webhookBody(event, log);
  headers['x-converge-event'] = event.type;
  headers['x-converge-delivery'] = event.id;
  if (receiver.secret) headers['x-converge-signature-256'] = signature(body, receiver.secret);
  return { url: receiver.url!, body, headers };
}

/** A sender for these receivers (their environment already read: resolveReceivers). */
export function createSender(receivers: readonly ResolvedReceiver[], options: SenderOptions): Sender {
  const byName = new Map(receivers.map((r) => [r.name, r]));
  // One agent per receiver: a receiver that hangs holds its own connections only.
  const agents = new Map<string, Agent>();
  return {
    receivers: receivers.map((r) => ({ name: r.name, type: r.type })),
    async deliver(name, event) {
      const receiver = byName.get(name);
      if (!receiver) return { outcome: 'skipped', detail: `no receiver "${name}" is configured in this process` };
      const request = await requestFor(receiver, event, options);
      if ('skip' in request) return { outcome: 'skipped', detail: request.skip };
      let agent = agents.get(name);
      if (!agent) agents.set(name, (agent = deliveryAgent(receiver.inFlight)));
      return classifyAnswer(await postTo(agent, request.url, request.body, request.headers, receiver.timeoutMs));
    },
    async close() {
      // Requests still in flight (a receiver that never answers) are ended, not waited for.
      const open = [...agents.values()];
      agents.clear();
      await Promise.all(open.map((agent) => agent.destroy().catch(() => undefined)));
    },
  };
}

/** The event `converge notify test` sends: a success of the receiver itself, on the given commit when there is one. */
export function testEvent(receiver: string, now: Date, manifestVersion: NotifyEvent['manifestVersion']): NotifyEvent {
  const resource = { kind: 'Receiver', name: receiver };
  return {
    id: eventId(resource, TEST_EVENT_TYPE, now.toISOString()),
    type: TEST_EVENT_TYPE,
    resource,
    reason: 'Test',
    message: `a test notification from converge notify test to receiver "${receiver}"`,
    manifestVersion,
    time: now.toISOString(),
  };
}
