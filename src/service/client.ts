// ServiceClient: one method per endpoint of the service (spec + POST /v2/deployments), over a keep-alive undici Agent.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ConvergeError, ServiceError } from '../core/errors.js';
import type { LiveProviders } from '../core/model.js';
import type { ProviderReads } from '../core/kinds/index.js';
import {
  Deployment,
  Integration,
  ListDeploymentsResponse,
  ListRevisionsResponse,
  LogPage,
  OAuthProvider,
  Revision,
  Repository,
  type CreateDeploymentRequest,
  type CreateProviderRequest,
  type DeploymentStatus,
  type LogRequest,
  type ServiceDeploymentType,
  type McpDiscoverRequest,
  type PatchDeploymentRequest,
  type PatchProviderRequest,
} from '../core/wire/schema.js';
import { HttpTransport, type HttpOptions } from './transport.js';

export type { RequestInfo } from './transport.js';

/** Options of a ServiceClient; every timeout and limit has a default (10 s connect, 30 s headers, 30 s body idle, 32 MiB). */
export type ClientOptions = HttpOptions;

/** The connection settings converge's commands and worker processes share (a subset of the CLI settings). */
export interface ServiceSettings {
  apiUrl: string;
  apiKey?: string | undefined;
  tenantId?: string | undefined;
  requestTimeout: number;
}

/** Client options from connection settings: the request timeout bounds both headers and body. */
export function clientOptionsFrom(settings: ServiceSettings, onRequest?: ClientOptions['onRequest'], onRetry?: ClientOptions['onRetry']): ClientOptions {
  return {
    baseUrl: settings.apiUrl,
    apiKey: settings.apiKey,
    tenantId: settings.tenantId,
    headersTimeoutMs: settings.requestTimeout,
    bodyTimeoutMs: settings.requestTimeout,
    onRequest,
    ...(onRetry ? { onRetry } : {}),
  };
}

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
  | { outcome: 'found'; deployment: Deployment }
  | { outcome: 'gone' }
  | { outcome: 'no-endpoint'; status: number };

/**
 * What GET /v2/deployments/{id}/revisions/{revision_id} answered: the revision; `gone`, the service's own 404 for a
 * deployment or revision it does not have; or `no-endpoint`, a service without the endpoint (any other 404, or 405).
 */
export type RevisionById = { outcome: 'found'; revision: Revision } | { outcome: 'gone' } | { outcome: 'no-endpoint'; status: number };

/**
 * One page of a log endpoint (beyond the spec): `found`; `gone`, the service's own 404 for the deployment or revision;
 * or `no-endpoint`, a service without the log endpoints (any other 404, or 405), said once per client (onNotice).
 */
export type LogRead = { outcome: 'found'; page: LogPage } | { outcome: 'gone' } | { outcome: 'no-endpoint'; status: number };

/** The detail of the service's 404 for a revision id it does not have. */
const REVISION_NOT_FOUND = /^(Revision|Deployment) ID .* not found\.?$/;

/** The detail of the service's 404 for a deployment id it does not have (docs/real-service.md §1). */
const DEPLOYMENT_NOT_FOUND = /^Deployment ID .* not found\.?$/;

export const ROUTES = {
  deployments: '/v2/deployments',
  deployment: '/v2/deployments/{deployment_id}',
  revisions: '/v2/deployments/{deployment_id}/revisions',
  revision: '/v2/deployments/{deployment_id}/revisions/{revision_id}',
  providers: '/v2/auth/providers',
  mcpDiscover: '/v2/auth/providers/mcp-discover',
  provider: '/v2/auth/providers/{provider_id}',
  buildLogs: '/v1/projects/{project_id}/revisions/{revision_id}/build_logs',
  deployLogs: '/v1/projects/{project_id}/deploy_logs',
  revisionDeployLogs: '/v1/projects/{project_id}/revisions/{revision_id}/deploy_logs',
  integrations: '/v1/integrations/forge/codehost/install',
  repositories: '/v1/integrations/forge/codehost/{integration_id}/repos',
} as const;

const IntegrationList = z.array(Integration);
/** GET /v2/auth/providers answers a plain array (docs/real-service.md §6; the emulator does the same): no paging. */
const ProviderList = z.array(OAuthProvider);

/** The 400 detail of a DELETE of a deployment the service is deleting already. */
const BEING_DELETED = /is being deleted/i;

/** Statuses by which a service says it lacks an endpoint beyond the spec. */
const ABSENT_ENDPOINT = new Set([404, 405]);

function providersUnreadableNote(status: number): string {
  return (
    `the service has no GET ${ROUTES.providers} (it answered ${status}), so converge cannot read or update OAuth providers: ` +
    'it plans them from its own records as the spec alone allows (each is created once; a later change to one is blocked)'
  );
}
const RepositoryList = z.array(Repository);

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

/** Secret values a write carries: redacted from anything the service echoes back in an error. */
function secretValues(body: { secrets?: Array<{ value: string }> | null; client_secret?: string | null }): string[] {
  const values = (body.secrets ?? []).map((s) => s.value);
  if (body.client_secret) values.push(body.client_secret);
  return values.filter((v) => v.length > 0);
}

/** The service's HTTP API. GETs retry outside jobs (network, 429, 5xx, honouring Retry-After; see transport.ts sendingOnce); writes are sent once. */
/** The reads that follow a rollout (the daemon's poller, apply --wait): the revision endpoint and the list by ids. */
export type RevisionReads = Pick<ServiceClient, 'revisionReads' | 'readRevision' | 'listDeploymentsById'>;

export class ServiceClient {
  private readonly http: HttpTransport;
  /** Whether the service reads providers: the answer of the first provider list, kept for the client's life. */
  private providerAccess: ProviderReads | undefined;
  /** The delete probe, in flight or answered: sent once per client. */
  private deleteProbe: Promise<{ deletes: true } | { deletes: false; note: string }> | undefined;
  /** The probe in flight, so concurrent jobs wait for one list instead of each sending its own. */
  private providerProbe: Promise<ProviderReads> | undefined;
  /** Whether GET /v2/deployments/{id} exists: undefined until the first read by id tells. */
  private readByIdAvailable: boolean | undefined;
  /** The first read by id, while it is in flight: later reads wait for it rather than probe again. */
  private probing: Promise<void> | undefined;
  /** Whether GET …/revisions/{revision_id} exists: undefined until the first readRevision tells. */
  private revisionReadsAvailable: boolean | undefined;
  /** The first readRevision, while it is in flight. */
  private revisionProbe: Promise<void> | undefined;
  private readonly noticeListeners = new Set<(message: string) => void>();
  /** Whether the log endpoints exist: undefined until the first log read tells. */
  private logsAvailable: boolean | undefined;

  constructor(options: ClientOptions) {
    this.http = new HttpTransport(options);
  }

  /** Calls `listener` with each one-time notice of this client (a fallback it chose); returns the function that stops it. */
  onNotice(listener: (message: string) => void): () => void {
    this.noticeListeners.add(listener);
    return () => this.noticeListeners.delete(listener);
  }

  private notice(message: string): void {
    for (const listener of this.noticeListeners) {
      try {
        listener(message);
      } catch {
        // A listener's failure must never change the outcome of a read.
      }
    }
  }

  /**
   * Pages of GET /v2/deployments: limit=100, the next request uses the offset the service returned, and the
   * list ends at the first empty page (a short page is not the end). A page with items whose returned offset
   * does not move forward fails with E_PAGING rather than looping.
   *
   * With `prefetch` > 1, up to that many requests are in flight: the next pages are requested ahead at the
   * offsets the last step predicts (offset + step, offset + 2 x step, ...). A page is only ever used when it was
   * requested at exactly the offset the previous page returned; when the prediction fails (a short page, offsets
   * that are not arithmetic), the pages read ahead are dropped unread and reading ahead restarts from one. The
   * cost: up to `prefetch - 1` requests past the empty page that ends the list (and as many per failed prediction).
   */
  async *listDeploymentPages(query: ListDeploymentsQuery = {}, options: ListPagesOptions = {}): AsyncGenerator<Deployment[], void, undefined> {
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
        if (!ahead.has(offset)) ahead.set(offset, this.fetchPage(filters, offset));
        // Slow start: one request first, doubling the pages read ahead while the predictions hold.
        for (let k = 1; k < width && ahead.size < inFlight; k++) {
          const next = offset + step * k;
          if (!ahead.has(next)) ahead.set(next, this.fetchPage(filters, next));
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
  private fetchPage(filters: URLSearchParams, offset: number): Promise<PageOutcome> {
    const params = new URLSearchParams(filters);
    params.set('limit', String(PAGE_LIMIT));
    params.set('offset', String(offset));
    return this.http
      .send({ method: 'GET', route: ROUTES.deployments, path: ROUTES.deployments, query: params, schema: ListDeploymentsResponse })
      .then(
        (page): PageOutcome => ({ ok: true, page }),
        (error: unknown): PageOutcome => ({ ok: false, error }),
      );
  }

  /** Every deployment, all pages. */
  async listDeployments(query: ListDeploymentsQuery = {}): Promise<Deployment[]> {
    const all: Deployment[] = [];
    for await (const page of this.listDeploymentPages(query)) all.push(...page);
    return all;
  }

  /**
   * The deployments of these ids, through the list filtered by deployment_ids: paging stops once every id was
   * found (one request for up to 100 ids that all exist), so a poll does not read on to the empty page.
   */
  async listDeploymentsById(ids: readonly string[]): Promise<Deployment[]> {
    const wanted = new Set(ids);
    const found: Deployment[] = [];
    if (wanted.size === 0) return found;
    for await (const page of this.listDeploymentPages({ deployment_ids: [...wanted] })) {
      for (const d of page) if (wanted.delete(d.id)) found.push(d);
      if (wanted.size === 0) break;
    }
    return found;
  }

  /** GET /v2/deployments/{deployment_id} (beyond the interface; docs/real-service.md §6). Retried like every GET. */
  async getDeployment(id: string): Promise<DeploymentById> {
    try {
      const deployment = await this.http.send({
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

  /**
   * One deployment by id, or undefined when the service has none of that id. Through GET /v2/deployments/{id} when
   * the service has it; the first read probes, and a service without it (404 that is not its "not found", or 405)
   * is read through the list filtered by deployment_ids for the rest of this client's life, said once (onNotice).
   */
  async readDeployment(id: string): Promise<Deployment | undefined> {
    while (this.readByIdAvailable === undefined && this.probing) await this.probing;
    if (this.readByIdAvailable === false) return this.readDeploymentFromList(id);
    let probed: (() => void) | undefined;
    if (this.readByIdAvailable === undefined) this.probing = new Promise<void>((done) => (probed = done));
    try {
      const answer = await this.getDeployment(id);
      if (answer.outcome === 'no-endpoint') {
        this.readByIdAvailable = false;
        this.notice(
          `the service has no GET ${ROUTES.deployment} (it answered ${answer.status}); a job reads a deployment from GET ${ROUTES.deployments}?deployment_ids= instead, for the rest of this process`,
        );
        return this.readDeploymentFromList(id);
      }
      this.readByIdAvailable = true;
      return answer.outcome === 'found' ? answer.deployment : undefined;
    } finally {
      if (probed) {
        this.probing = undefined;
        probed();
      }
    }
  }

  /** The spec's way to read one deployment: the list filtered by deployment_ids. */
  private async readDeploymentFromList(id: string): Promise<Deployment | undefined> {
    for await (const page of this.listDeploymentPages({ deployment_ids: [id] })) {
      const hit = page.find((d) => d.id === id);
      if (hit) return hit;
    }
    return undefined;
  }

  /** GET /v2/deployments/{deployment_id}/revisions/{revision_id} (beyond the interface; docs/real-service.md §6). Retried like every GET. */
  async getRevision(deploymentId: string, revisionId: string): Promise<RevisionById> {
    try {
      const revision = await this.http.send({
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
  async listRevisions(deploymentId: string, query: { limit?: number; offset?: number; status?: string } = {}): Promise<ListRevisionsResponse | undefined> {
    const params = new URLSearchParams();
    params.set('limit', String(query.limit ?? PAGE_LIMIT));
    params.set('offset', String(query.offset ?? 0));
    if (query.status) params.set('status', query.status);
    try {
      return await this.http.send({
        method: 'GET',
        route: ROUTES.revisions,
        path: `${ROUTES.deployments}/${encodeURIComponent(deploymentId)}/revisions`,
        query: params,
        schema: ListRevisionsResponse,
      });
    } catch (error) {
      if (error instanceof ServiceError && error.status === 405) return undefined;
      if (error instanceof ServiceError && error.status === 404 && !DEPLOYMENT_NOT_FOUND.test(error.detail)) return undefined;
      throw error;
    }
  }

  /**
   * The revision `revisionId` of a deployment, `gone`, or `no-endpoint`: through GET …/revisions/{revision_id} while
   * the service has it. The first read probes; a service without it (405, or a 404 that is not its "not found") is
   * not asked again for the rest of this client's life, said once (onNotice), and every later call answers
   * `no-endpoint` without a request (the caller falls back to the spec's fields and the progress deadline).
   */
  async readRevision(deploymentId: string, revisionId: string): Promise<RevisionById> {
    while (this.revisionReadsAvailable === undefined && this.revisionProbe) await this.revisionProbe;
    if (this.revisionReadsAvailable === false) return { outcome: 'no-endpoint', status: 0 };
    let probed: (() => void) | undefined;
    if (this.revisionReadsAvailable === undefined) this.revisionProbe = new Promise<void>((done) => (probed = done));
    try {
      const answer = await this.getRevision(deploymentId, revisionId);
      if (answer.outcome === 'no-endpoint') {
        this.revisionReadsAvailable = false;
        this.notice(
          `the service has no GET ${ROUTES.revision} (it answered ${answer.status}): a failed build cannot be seen; a revision not active after progress_deadline is reported degraded (ProgressDeadlineExceeded), for the rest of this process`,
        );
      } else this.revisionReadsAvailable = true;
      return answer;
    } finally {
      if (probed) {
        this.revisionProbe = undefined;
        probed();
      }
    }
  }

  /** POST /v1/projects/{deployment_id}/revisions/{revision_id}/build_logs (beyond the spec): a read, retried like a GET. */
  async buildLogs(deploymentId: string, revisionId: string, request: LogRequest): Promise<LogRead> {
    const path = `/v1/projects/${encodeURIComponent(deploymentId)}/revisions/${encodeURIComponent(revisionId)}/build_logs`;
    return this.readLogs(ROUTES.buildLogs, path, request);
  }

  /** POST /v1/projects/{deployment_id}/deploy_logs, or …/revisions/{revision_id}/deploy_logs for one revision (beyond the spec). */
  async deployLogs(deploymentId: string, request: LogRequest, revisionId?: string): Promise<LogRead> {
    const base = `/v1/projects/${encodeURIComponent(deploymentId)}`;
    if (revisionId === undefined) return this.readLogs(ROUTES.deployLogs, `${base}/deploy_logs`, request);
    return this.readLogs(ROUTES.revisionDeployLogs, `${base}/revisions/${encodeURIComponent(revisionId)}/deploy_logs`, request);
  }

  private async readLogs(route: string, path: string, request: LogRequest): Promise<LogRead> {
    if (this.logsAvailable === false) return { outcome: 'no-endpoint', status: 0 };
    try {
      const page = await this.http.send({ method: 'POST', route, path, body: request, schema: LogPage, read: true });
      this.logsAvailable = true;
      return { outcome: 'found', page };
    } catch (error) {
      if (!(error instanceof ServiceError) || !ABSENT_ENDPOINT.has(error.status)) throw error;
      if (error.status === 404 && REVISION_NOT_FOUND.test(error.detail)) return { outcome: 'gone' };
      if (this.logsAvailable === undefined) {
        this.logsAvailable = false;
        this.notice(`the service has no ${route} (it answered ${error.status}): build and deploy logs cannot be shown, for the rest of this process`);
      }
      return { outcome: 'no-endpoint', status: error.status };
    }
  }

  /** Whether revisions can be read: undefined until the first readRevision tells. */
  get revisionReads(): boolean | undefined {
    return this.revisionReadsAvailable;
  }

  /** POST /v2/deployments (201). Not retried: the create job adopts on 409 after a lost answer. */
  async createDeployment(body: CreateDeploymentRequest): Promise<Deployment> {
    return this.http.send({
      method: 'POST',
      route: ROUTES.deployments,
      path: ROUTES.deployments,
      body,
      sensitive: secretValues(body),
      schema: Deployment,
    });
  }

  /** PATCH /v2/deployments/{deployment_id}. Not retried here. */
  async patchDeployment(id: string, body: PatchDeploymentRequest): Promise<Deployment> {
    return this.http.send({
      method: 'PATCH',
      route: ROUTES.deployment,
      path: `${ROUTES.deployments}/${encodeURIComponent(id)}`,
      body,
      sensitive: secretValues(body),
      schema: Deployment,
    });
  }

  /**
   * DELETE /v2/deployments/{deployment_id} (beyond the spec; 204). `gone` when the service answers its own 404 (no such
   * id: deleted already) or 400 because the deployment is being deleted. Not retried here: the delete job re-reads
   * the id before it sends again.
   */
  async deleteDeployment(id: string, options: { deleteTracingProject: boolean }): Promise<'deleted' | 'gone'> {
    const query = new URLSearchParams();
    if (options.deleteTracingProject) query.set('delete_tracing_project', 'true');
    try {
      await this.http.send({
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

  /**
   * Whether the service deletes deployments (DELETE /v2/deployments/{id}, beyond the spec), probed once per client
   * with an id no deployment has: the service's own "not found" says it has the endpoint; any other 404, or 405, says
   * it has not (then `deletes: false` with the note a plan shows). Nothing is deleted by the probe.
   */
  async deploymentDeletes(): Promise<{ deletes: true } | { deletes: false; note: string }> {
    this.deleteProbe ??= (async () => {
      try {
        // Deletes nothing, so a failure worth retrying (network, 429, 5xx) is tried again by the transport, as a read is.
        await this.http.send({ method: 'DELETE', route: ROUTES.deployment, path: `${ROUTES.deployments}/${randomUUID()}`, schema: z.undefined(), noContent: true, idempotent: true });
        return { deletes: true as const };
      } catch (error) {
        if (error instanceof ServiceError && error.status === 404 && DEPLOYMENT_NOT_FOUND.test(error.detail)) return { deletes: true as const };
        if (error instanceof ServiceError && ABSENT_ENDPOINT.has(error.status)) {
          return {
            deletes: false as const,
            note: `prune is off: the service has no DELETE ${ROUTES.deployment} (it answered ${error.status}), so converge cannot delete deployments; owned deployments no longer declared are only reported`,
          };
        }
        this.deleteProbe = undefined;
        throw error;
      }
    })();
    return this.deleteProbe;
  }

  /** DELETE /v2/auth/providers/{provider_id} (beyond the spec; 204); `gone` on 404. Not retried here. */
  async deleteProvider(providerId: string): Promise<'deleted' | 'gone'> {
    try {
      await this.http.send({ method: 'DELETE', route: ROUTES.provider, path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`, schema: z.undefined(), noContent: true });
      return 'deleted';
    } catch (error) {
      if (error instanceof ServiceError && error.status === 404) return 'gone';
      throw error;
    }
  }

  /** POST /v2/auth/providers. Not retried here. */
  async createProvider(body: CreateProviderRequest): Promise<OAuthProvider> {
    return this.http.send({
      method: 'POST',
      route: ROUTES.providers,
      path: ROUTES.providers,
      body,
      sensitive: secretValues(body),
      schema: OAuthProvider,
    });
  }

  /** POST /v2/auth/providers/mcp-discover. Not retried here. */
  async discoverProvider(body: McpDiscoverRequest): Promise<OAuthProvider> {
    return this.http.send({ method: 'POST', route: ROUTES.mcpDiscover, path: ROUTES.mcpDiscover, body, schema: OAuthProvider });
  }

  /**
   * GET /v2/auth/providers (beyond the spec): every provider of the organization, one request (the service answers a
   * plain array). A 404 or 405 means the service lacks the endpoint: the answer is `readable: false` with the note a
   * plan shows, and from then on this client sends no provider read again (probed once per process).
   */
  async listProviders(): Promise<LiveProviders> {
    if (this.providerAccess && !this.providerAccess.readable) return this.providerAccess;
    try {
      const providers = await this.http.send({ method: 'GET', route: ROUTES.providers, path: ROUTES.providers, schema: ProviderList });
      this.providerAccess = { readable: true };
      return { readable: true, providers };
    } catch (error) {
      if (!(error instanceof ServiceError) || !ABSENT_ENDPOINT.has(error.status)) throw error;
      this.providerAccess = { readable: false, note: providersUnreadableNote(error.status) };
      return this.providerAccess;
    }
  }

  /** Whether the service reads and updates providers: known from an earlier list, else one list now (the probe). */
  async providerReads(): Promise<ProviderReads> {
    if (this.providerAccess) return this.providerAccess;
    this.providerProbe ??= this.listProviders().then(
      (listing): ProviderReads => (listing.readable ? { readable: true } : listing),
      (error: unknown) => {
        // A failed probe (network, 5xx after retries) decides nothing: the next caller probes again.
        this.providerProbe = undefined;
        throw error;
      },
    );
    return this.providerProbe;
  }

  /** GET /v2/auth/providers/{provider_id} (beyond the spec); undefined when the service has no such provider (404). */
  async getProvider(providerId: string): Promise<OAuthProvider | undefined> {
    try {
      return await this.http.send({
        method: 'GET',
        route: ROUTES.provider,
        path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`,
        schema: OAuthProvider,
      });
    } catch (error) {
      if (error instanceof ServiceError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** PATCH /v2/auth/providers/{provider_id} (beyond the spec). Not retried here. */
  async patchProvider(providerId: string, body: PatchProviderRequest): Promise<OAuthProvider> {
    return this.http.send({
      method: 'PATCH',
      route: ROUTES.provider,
      path: `${ROUTES.providers}/${encodeURIComponent(providerId)}`,
      body,
      sensitive: secretValues(body),
      schema: OAuthProvider,
    });
  }

  /** GET /v1/integrations/forge/codehost/install. */
  async listIntegrations(): Promise<Integration[]> {
    return this.http.send({ method: 'GET', route: ROUTES.integrations, path: ROUTES.integrations, schema: IntegrationList });
  }

  /** GET /v1/integrations/forge/codehost/{integration_id}/repos. */
  async listRepositories(integrationId: string): Promise<Repository[]> {
    return this.http.send({
      method: 'GET',
      route: ROUTES.repositories,
      path: `/v1/integrations/forge/codehost/${encodeURIComponent(integrationId)}/repos`,
      schema: RepositoryList,
    });
  }

  /** Ends pending retries and closes the connections once in-flight requests finish. */
  async close(): Promise<void> {
    await this.http.close();
  }

  /** Drops the connections now: requests in flight fail with a network error (a stop that cannot wait for them). */
  async destroy(): Promise<void> {
    await this.http.destroy();
  }
}
