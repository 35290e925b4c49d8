// The revision endpoints of ServiceClient (beyond the spec): one revision by id, and a page of a deployment's revisions.
import { ServiceError } from '../core/errors.js';
import { ListRevisionsResponse, Revision } from '../core/wire/schema.js';
import { PAGE_LIMIT } from './deployments.js';
import { ABSENT_ENDPOINT, DEPLOYMENT_NOT_FOUND, REVISION_NOT_FOUND, ROUTES } from './endpoints.js';
import type { HttpTransport } from './transport.js';

/**
 * What GET /v2/deployments/{id}/revisions/{revision_id} answered: the revision; `gone`, the service's own 404 for a
 * deployment or revision it does not have; or `no-endpoint`, a service without the endpoint (any other 404, or 405).
 */
export type RevisionById =
  { outcome: 'found'; revision: Revision } | { outcome: 'gone' } | { outcome: 'no-endpoint'; status: number };

/** GET /v2/deployments/{deployment_id}/revisions/{revision_id} (beyond the interface; docs/against-the-real-service.md §6). Retried like every GET. */
export async function getRevision(
  http: HttpTransport,
  deploymentId: string,
  revisionId: string,
): Promise<RevisionById> {
  try {
    const revision = await http.send({
      method: 'GET',
      route: ROUTES.revision,
      path: `${ROUTES.deployments}/${encodeURIComponent(deploymentId)}/revisions/${encodeURIComponent(revisionId)}`,
      schema: Revision,
    });
    return { outcome: 'found', revision };
  } catch (error) {
    if (!(error instanceof ServiceError) || !ABSENT_ENDPOINT.has(error.status)) throw error;
    if (error.status === 404 && REVISION_NOT_FOUND.test(error.detail)) return { outcome: 'gone' };
    return { outcome: 'no-endpoint', status: error.status };
  }
}

/** GET /v2/deployments/{deployment_id}/revisions (beyond the spec): one page, newest first; undefined without the endpoint. */
export async function listRevisions(
  http: HttpTransport,
  deploymentId: string,
  query: { limit?: number; offset?: number; status?: string },
): Promise<ListRevisionsResponse | undefined> {
  const params = new URLSearchParams();
  params.set('limit', String(query.limit ?? PAGE_LIMIT));
  params.set('offset', String(query.offset ?? 0));
  if (query.status) params.set('status', query.status);
  try {
    return await http.send({
      method: 'GET',
      route: ROUTES.revisions,
      path: `${ROUTES.deployments}/${encodeURIComponent(deploymentId)}/revisions`,
      query: params,
      schema: ListRevisionsResponse,
    });
  } catch (error) {
    if (error instanceof ServiceError && error.status === 405) return undefined;
    if (error instanceof ServiceError && error.status === 404 && !DEPLOYMENT_NOT_FOUND.test(error.detail))
      return undefined;
    throw error;
  }
}
