// The log endpoints of ServiceClient (beyond the spec): one page of a revision's build log or of a deployment's deploy log.
import { ServiceError } from '../core/errors.js';
import { LogPage, type LogRequest } from '../core/wire/schema.js';
import { ABSENT_ENDPOINT, REVISION_NOT_FOUND, ROUTES } from './endpoints.js';
import type { HttpTransport } from './transport.js';

/**
 * One page of a log endpoint (beyond the spec): `found`; `gone`, the service's own 404 for the deployment or revision;
 * or `no-endpoint`, a service without the log endpoints (any other 404, or 405), said once per client (onNotice).
 */
export type LogRead =
  { outcome: 'found'; page: LogPage } | { outcome: 'gone' } | { outcome: 'no-endpoint'; status: number };

/** A log endpoint's route (for metrics and notices) and the concrete path of one read. */
export interface LogEndpoint {
  route: string;
  path: string;
}

/** POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs. */
export function buildLogsEndpoint(deploymentId: string, revisionId: string): LogEndpoint {
  return {
    route: ROUTES.buildLogs,
    path: `/v1/projects/${encodeURIComponent(deploymentId)}/revisions/${encodeURIComponent(revisionId)}/build_logs`,
  };
}

/** POST /v1/projects/{deployment_id}/deploy_logs, or …/revisions/{revision_id}/deploy_logs for one revision. */
export function deployLogsEndpoint(deploymentId: string, revisionId?: string): LogEndpoint {
  const base = `/v1/projects/${encodeURIComponent(deploymentId)}`;
  if (revisionId === undefined) return { route: ROUTES.deployLogs, path: `${base}/deploy_logs` };
  return { route: ROUTES.revisionDeployLogs, path: `${base}/revisions/${encodeURIComponent(revisionId)}/deploy_logs` };
}

/** One page of a log endpoint: a POST that only reads, so retried like a GET. A service without the endpoint is `no-endpoint`. */
export async function readLogPage(http: HttpTransport, endpoint: LogEndpoint, request: LogRequest): Promise<LogRead> {
  const { route, path } = endpoint;
  try {
    const page = await http.send({ method: 'POST', route, path, body: request, schema: LogPage, read: true });
    return { outcome: 'found', page };
  } catch (error) {
    if (!(error instanceof ServiceError) || !ABSENT_ENDPOINT.has(error.status)) throw error;
    if (error.status === 404 && REVISION_NOT_FOUND.test(error.detail)) return { outcome: 'gone' };
    return { outcome: 'no-endpoint', status: error.status };
  }
}
