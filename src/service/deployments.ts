// The deployment endpoints of ServiceClient: the paged list, the read by id, create, patch, delete and the delete probe.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ConvergeError, ServiceError } from '../core/errors.js';
import {
  Deployment,
  ListDeploymentsResponse,
  type CreateDeploymentRequest,
  type DeploymentStatus,
  type PatchDeploymentRequest,
  type ServiceDeploymentType,
} from '../core/wire/schema.js';
import { ABSENT_ENDPOINT, DEPLOYMENT_NOT_FOUND, ROUTES, secretValues } from './endpoints.js';
import type { HttpTransport } from './transport.js';

/** Filters of GET /v2/deployments (the spec's query parameters). Lists are sent comma-separated. */
export interface ListDeploymentsQuery {
  name_contains?: string;
  /** A known status, or any other value a newer service accepts. */
  status?: DeploymentStatus | (string & {});
  remote_reconciled?: boolean;
  tag_value_ids?: string[];
  image_version?: string;
  /** A tier of the spec's list, or one a newer service adds (dev_zero, dev_free_zero). */
  deployment_type?: ServiceDeploymentType;
  deployment_ids?: string[];
}

/** The service's maximum page size (spec: 1 <= limit <= 100). */
export const PAGE_LIMIT = 100;

/** How listDeploymentPages reads. */
export interface ListPagesOptions {
  /** Requests in flight at most: 1 (the default) reads page after page; more reads pages ahead (see there). */
  prefetch?: number;
}

type PageOutcome = { ok: true; page: ListDeploymentsResponse } | { ok: false; error: unknown };

/**
 * What GET /v2/deployments/{id} answered: the deployment; `gone`, the service's own 404 ("Deployment ID … not
 * found."); or `no-endpoint`, a service without the endpoint (any other 404, or 405).
 */
export type DeploymentById =
  { outcome: 'found'; deployment: Deployment } | { outcome: 'gone' } | { outcome: 'no-endpoint'; status: number };

/** What the delete probe found: the service deletes deployments, or it does not (with the note a plan shows). */
export type DeploymentDeletes = { deletes: true } | { deletes: false; note: string };

/** The 400 detail of a DELETE of a deployment the service is deleting already. */
const BEING_DELETED = /is being deleted/i;

function filterParams(query: ListDeploymentsQuery): URLSearchParams {
  const params = new URLSearchParams();
  const scalar = (name: string, value: string | boolean | undefined): void => {
    if (value !== undefined && value !== null) params.set(name, String(value));
  };
  scalar('name_contains', query.name_contains);
  scalar('status', query.status);
  scalar('remote_reconciled', query.remote_reconciled);
  if (query.tag_value_ids) params.set('tag_value_ids', query.tag_value_ids.join(','));
  scalar('image_version', query.image_version);
  scalar('deployment_type', query.deployment_type);
  if (query.deployment_ids) params.set('deployment_ids', query.deployment_ids.join(','));
  return params;
}

/** Pages of GET /v2/deployments (ServiceClient.listDeploymentPages says how they are read). */
export async function* listDeploymentPages(
  http: HttpTransport,
  query: ListDeploymentsQuery,
  options: ListPagesOptions,
): AsyncGenerator<Deployment[], void, undefined> {
  // An empty id/tag filter means "none of them"; sent as an empty parameter it could read as "no filter".
  if (query.deployment_ids?.length === 0 || query.tag_value_ids?.length === 0) return;
  const filters = filterParams(query);
  const inFlight = Math.max(1, Math.floor(options.prefetch ?? 1));
  const ahead = new Map<number, Promise<PageOutcome>>();
  // Ids listed so far: a page that holds only these is the service serving the same items again (an offset that
  // moves while the page does not); stopping there keeps a misbehaving service from making the list endless.
  const seen = new Set<string>();
  let offset = 0;
  let step = PAGE_LIMIT;
  let width = 1;
  try {
    for (;;) {
      if (!ahead.has(offset)) ahead.set(offset, fetchPage(http, filters, offset));
      // Slow start: one request first, doubling the pages read ahead while the predictions hold.
      for (let k = 1; k < width && ahead.size < inFlight; k++) {
        const next = offset + step * k;
        if (!ahead.has(next)) ahead.set(next, fetchPage(http, filters, next));
      }
      const outcome = await ahead.get(offset)!;
      ahead.delete(offset);
      if (!outcome.ok) throw outcome.error;
      const page = outcome.page;
      if (page.resources.length === 0) return;
      if (page.offset <= offset) {
        throw new ConvergeError(
          'E_PAGING',
          `GET ${ROUTES.deployments}: the page at offset ${offset} held ${page.resources.length} deployments but the service returned next offset ${page.offset}; stopping instead of reading the same page forever`,
        );
      }
      let fresh = 0;
      for (const item of page.resources) {
        if (seen.has(item.id)) continue;
        seen.add(item.id);
        fresh += 1;
      }
      if (fresh === 0) {
        throw new ConvergeError(
          'E_PAGING',
          `GET ${ROUTES.deployments}: the page at offset ${offset} held only deployments already listed (next offset ${page.offset}); stopping instead of reading the same deployments forever`,
        );
      }
      if (page.offset - offset === step) {
        width = Math.min(inFlight, width * 2);
      } else {
        // Every page read ahead was requested at an offset the service did not return: none of them is used.
        ahead.clear();
        step = page.offset - offset;
        width = 1;
      }
      offset = page.offset;
      yield page.resources;
    }
  } finally {
    // Requests still in flight finish on their own; their outcomes are settled values, so nothing is left unhandled.
    ahead.clear();
  }
}

/** One page at `offset`; failures are returned, not thrown, so a page read ahead and then dropped rejects nothing. */
function fetchPage(http: HttpTransport, filters: URLSearchParams, offset: number): Promise<PageOutcome> {
  const params = new URLSearchParams(filters);
  params.set('limit', String(PAGE_LIMIT));
  params.set('offset', String(offset));
  return http
    .send({
      method: 'GET',
      route: ROUTES.deployments,
      path: ROUTES.deployments,
      query: params,
      schema: ListDeploymentsResponse,
    })
    .then(
      (page): PageOutcome => ({ ok: true, page }),
      (error: unknown): PageOutcome => ({ ok: false, error }),
    );
}

/** The deployments of these ids, through the list filtered by deployment_ids, stopping once every id was found. */
export async function listDeploymentsById(http: HttpTransport, ids: readonly string[]): Promise<Deployment[]> {
  const wanted = new Set(ids);
  const found: Deployment[] = [];
  if (wanted.size === 0) return found;
  for await (const page of listDeploymentPages(http, { deployment_ids: [...wanted] }, {})) {
    for (const d of page) if (wanted.delete(d.id)) found.push(d);
    if (wanted.size === 0) break;
  }
  return found;
}

/** The spec's way to read one deployment: the list filtered by deployment_ids. */
export async function readDeploymentFromList(http: HttpTransport, id: string): Promise<Deployment | undefined> {
  for await (const page of listDeploymentPages(http, { deployment_ids: [id] }, {})) {
    const hit = page.find((d) => d.id === id);
    if (hit) return hit;
  }
  return undefined;
}

/** GET /v2/deployments/{deployment_id} (beyond the interface; docs/against-the-real-service.md §6). Retried like every GET. */
export async function getDeployment(http: HttpTransport, id: string): Promise<DeploymentById> {
  try {
    const deployment = await http.send({
      method: 'GET',
      route: ROUTES.deployment,
      path: `${ROUTES.deployments}/${encodeURIComponent(id)}`,
      schema: Deployment,
    });
    return { outcome: 'found', deployment };
  } catch (error) {
    if (!(error instanceof ServiceError) || (error.status !== 404 && error.status !== 405)) throw error;
    if (error.status === 404 && DEPLOYMENT_NOT_FOUND.test(error.detail)) return { outcome: 'gone' };
    return { outcome: 'no-endpoint', status: error.status };
  }
}

/** POST /v2/deployments (201). Not retried. */
export async function createDeployment(http: HttpTransport, body: CreateDeploymentRequest): Promise<Deployment> {
  return http.send({
    method: 'POST',
    route: ROUTES.deployments,
    path: ROUTES.deployments,
    body,
    sensitive: secretValues(body),
    schema: Deployment,
  });
}

/** PATCH /v2/deployments/{deployment_id}. Not retried. */
export async function patchDeployment(
  http: HttpTransport,
  id: string,
  body: PatchDeploymentRequest,
): Promise<Deployment> {
  return http.send({
    method: 'PATCH',
    route: ROUTES.deployment,
    path: `${ROUTES.deployments}/${encodeURIComponent(id)}`,
    body,
    sensitive: secretValues(body),
    schema: Deployment,
  });
}

/** DELETE /v2/deployments/{deployment_id} (beyond the spec; 204): `gone` for its own 404 or a 400 "being deleted". Not retried. */
export async function deleteDeployment(
  http: HttpTransport,
  id: string,
  options: { deleteTracingProject: boolean },
): Promise<'deleted' | 'gone'> {
  const query = new URLSearchParams();
  if (options.deleteTracingProject) query.set('delete_tracing_project', 'true');
  try {
    await http.send({
      method: 'DELETE',
      route: ROUTES.deployment,
      path: `${ROUTES.deployments}/${encodeURIComponent(id)}`,
      ...(options.deleteTracingProject ? { query } : {}),
      schema: z.undefined(),
      noContent: true,
    });
    return 'deleted';
  } catch (error) {
    if (error instanceof ServiceError && error.status === 404 && DEPLOYMENT_NOT_FOUND.test(error.detail)) return 'gone';
    if (error instanceof ServiceError && error.status === 400 && BEING_DELETED.test(error.detail)) return 'gone';
    throw error;
  }
}

/** The start of the plan's note when the probe found no DELETE endpoint. */
const NO_DELETES = 'prune is off: the service has no DELETE';

/** Whether a plan note is the one the probe gives when the service does not delete (a saved plan keeps its notes). */
export function isNoDeletesNote(note: string): boolean {
  return note.startsWith(NO_DELETES);
}

/** One delete probe: a DELETE of an id no deployment has (ServiceClient.deploymentDeletes sends it once per client). */
export async function probeDeploymentDeletes(http: HttpTransport): Promise<DeploymentDeletes> {
  try {
    // Deletes nothing, so a failure worth retrying (network, 429, 5xx) is tried again by the transport, as a read is.
    await http.send({
      method: 'DELETE',
      route: ROUTES.deployment,
      path: `${ROUTES.deployments}/${randomUUID()}`,
      schema: z.undefined(),
      noContent: true,
      idempotent: true,
    });
    return { deletes: true as const };
  } catch (error) {
    if (error instanceof ServiceError && error.status === 404 && DEPLOYMENT_NOT_FOUND.test(error.detail))
      return { deletes: true as const };
    if (error instanceof ServiceError && ABSENT_ENDPOINT.has(error.status)) {
      return {
        deletes: false as const,
        note: `${NO_DELETES} ${ROUTES.deployment} (it answered ${error.status}), so converge cannot delete deployments; owned deployments no longer declared are only reported`,
      };
    }
    throw error;
  }
}
