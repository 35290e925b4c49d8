// The daemon's readiness (/readyz): running, Redis answering PING, the service's last answer, the manifests read.
import type { RequestInfo } from '../../service/client.js';
import type { Jobs } from '../../jobs/open-jobs.js';
import { redactRedisUrl } from '../../store/redis.js';
import type { ReadinessCheck } from '../server/status-server.js';
import { errorLine } from '../reconcile/run-record.js';
import { within } from '../within.js';

/** A check that waits longer than this fails (Redis ping). */
const PING_TIMEOUT_MS = 1_000;

/** The last answered and the last failed request to the service, and what failed. */
export interface RequestHealth {
  okAt: number;
  failAt: number;
  failure: string;
}

/** What to fix after a failed request, in the words the CLI uses (src/cli/main.ts): the key, or the URL. */
function requestHint(status: RequestInfo['status']): string {
  if (status === 401 || status === 403) {
    return '; check the API key in CONVERGE_API_KEY (--api-key), and for a key that spans several workspaces the workspace in CONVERGE_TENANT_ID (--tenant-id)';
  }
  if (status === 'network') return '; is the service up there? the URL comes from --api-url or CONVERGE_API_URL';
  return '';
}

/** Records one request's answer: no answer, a 5xx, 401 or 403 is a failure (with what to fix); anything else an answer. */
export function noteRequest(health: RequestHealth, info: RequestInfo): void {
  const failed = info.status === 'network' || info.status >= 500 || info.status === 401 || info.status === 403;
  if (failed) {
    health.failAt = Date.now();
    health.failure = `${info.method} ${info.route} answered ${info.status === 'network' ? 'nothing (network error)' : info.status}${requestHint(info.status)}`;
  } else {
    health.okAt = Date.now();
  }
}

/** Redis answers PING within PING_TIMEOUT_MS (not connected yet: fails). */
export async function redisCheck(jobs: Jobs | undefined, redisUrl: string): Promise<ReadinessCheck> {
  if (!jobs) return { name: 'redis', ok: false, detail: 'not connected yet' };
  const ping = await within(
    jobs.ping().then(
      () => true,
      (e: unknown) => errorLine(e),
    ),
    PING_TIMEOUT_MS,
  );
  const silent = `Redis at ${redactRedisUrl(redisUrl)} gave no answer to PING within ${PING_TIMEOUT_MS} ms: check that it is up, or set --redis-url or REDIS_URL`;
  return ping.done && ping.value === true
    ? { name: 'redis', ok: true }
    : { name: 'redis', ok: false, detail: ping.done ? String(ping.value) : silent };
}

/** The service's check (its last request answered) and the manifests' (read by the last reconcile); see `standby`. */
export function serviceChecks(
  health: RequestHealth,
  standby: boolean,
  manifests: { loaded: boolean; error: string | null } | undefined,
): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [];
  if (health.okAt === 0 && health.failAt === 0)
    checks.push(
      standby
        ? { name: 'service', ok: true, detail: 'standby: no request sent yet' }
        : { name: 'service', ok: false, detail: 'no request answered yet' },
    );
  else if (health.failAt > health.okAt)
    checks.push({ name: 'service', ok: false, detail: `last request failed: ${health.failure}` });
  else checks.push({ name: 'service', ok: true });
  const serviceFailed = health.failAt > health.okAt;
  if (manifests?.loaded) checks.push({ name: 'manifests', ok: true });
  // The first reconcile waits for the service: its failing check names the one cause; "not loaded yet" would be a second.
  else if (serviceFailed && !manifests?.error) return checks;
  else if (standby) checks.push({ name: 'manifests', ok: true, detail: 'standby: the leader reads the manifests' });
  else checks.push({ name: 'manifests', ok: false, detail: manifests?.error ?? 'not loaded yet' });
  return checks;
}

/** What a replica's readiness reads: whether it stops, Redis, whether it stands by, its requests and manifests. */
export interface ReplicaReadiness {
  stopping: boolean;
  jobs: Jobs | undefined;
  redisUrl: string;
  /** A standby serves jobs: it is ready without having read the manifests or (until a job) talked to the service. */
  standby: boolean;
  health: RequestHealth;
  manifests: { loaded: boolean; error: string | null } | undefined;
}

/** The replica's readiness checks (GET /readyz): running, Redis, then the service and the manifests. */
export async function readinessChecks(r: ReplicaReadiness): Promise<ReadinessCheck[]> {
  const running: ReadinessCheck = r.stopping
    ? { name: 'running', ok: false, detail: 'shutting down' }
    : { name: 'running', ok: true };
  const redis = await redisCheck(r.jobs, r.redisUrl);
  return [running, redis, ...serviceChecks(r.health, r.standby, r.manifests)];
}
