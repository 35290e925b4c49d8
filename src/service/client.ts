// ServiceClient: one method per endpoint of the service (spec + POST /v2/deployments), over a keep-alive undici Agent.
import type { LiveProviders } from '../core/model.js';
import type { ProviderReads } from '../core/kinds/index.js';
import type {
  CreateDeploymentRequest,
  CreateProviderRequest,
  Deployment,
  Integration,
  ListRevisionsResponse,
  LogRequest,
  McpDiscoverRequest,
  OAuthProvider,
  PatchDeploymentRequest,
  PatchProviderRequest,
  Repository,
} from '../core/wire/schema.js';
import * as deployments from './deployments.js';
import type { DeploymentById, DeploymentDeletes, ListDeploymentsQuery, ListPagesOptions } from './deployments.js';
import { ROUTES } from './endpoints.js';
import * as integrations from './integrations.js';
import * as logs from './logs.js';
import type { LogEndpoint, LogRead } from './logs.js';
import * as providers from './providers.js';
import * as revisions from './revisions.js';
import type { RevisionById } from './revisions.js';
import { HttpTransport, type HttpOptions } from './transport.js';

export type { RequestInfo } from './transport.js';
export type { LogRead } from './logs.js';

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
export function clientOptionsFrom(
  settings: ServiceSettings,
  onRequest?: ClientOptions['onRequest'],
  onRetry?: ClientOptions['onRetry'],
): ClientOptions {
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

/** The reads that follow a rollout (the daemon's poller, apply --wait): the revision endpoint and the list by ids. */
export type RevisionReads = Pick<ServiceClient, 'revisionReads' | 'readRevision' | 'listDeploymentsById'>;

/**
 * The service's HTTP API. GETs retry outside jobs (network, 429, 5xx, honouring Retry-After; see call-scope.ts
 * sendingOnce); writes are sent once. Each method sends through its endpoint family's module (deployments.ts,
 * revisions.ts, logs.ts, providers.ts, integrations.ts); the client keeps what it learnt of the service (which
 * endpoints beyond the spec it has) for its life, and says each fallback once (onNotice).
 */
export class ServiceClient {
  private readonly http: HttpTransport;
  /** Whether the service reads providers: the answer of the first provider list, kept for the client's life. */
  private providerAccess: ProviderReads | undefined;
  /** The delete probe, in flight or answered: sent once per client. */
  private deleteProbe: Promise<DeploymentDeletes> | undefined;
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
  listDeploymentPages(
    query: ListDeploymentsQuery = {},
    options: ListPagesOptions = {},
  ): AsyncGenerator<Deployment[], void, undefined> {
    return deployments.listDeploymentPages(this.http, query, options);
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
    return deployments.listDeploymentsById(this.http, ids);
  }

  /** GET /v2/deployments/{deployment_id} (beyond the interface; docs/against-the-real-service.md §6). Retried like every GET. */
  async getDeployment(id: string): Promise<DeploymentById> {
    return deployments.getDeployment(this.http, id);
  }

  /**
   * One deployment by id, or undefined when the service has none of that id. Through GET /v2/deployments/{id} when
   * the service has it; the first read probes, and a service without it (404 that is not its "not found", or 405)
   * is read through the list filtered by deployment_ids for the rest of this client's life, said once (onNotice).
   */
  async readDeployment(id: string): Promise<Deployment | undefined> {
    while (this.readByIdAvailable === undefined && this.probing) await this.probing;
    if (this.readByIdAvailable === false) return deployments.readDeploymentFromList(this.http, id);
    let probed: (() => void) | undefined;
    if (this.readByIdAvailable === undefined) this.probing = new Promise<void>((done) => (probed = done));
    try {
      const answer = await this.getDeployment(id);
      if (answer.outcome === 'no-endpoint') {
        this.readByIdAvailable = false;
        this.notice(
          `the service has no GET ${ROUTES.deployment} (it answered ${answer.status}); a job reads a deployment from GET ${ROUTES.deployments}?deployment_ids= instead, for the rest of this process`,
        );
        return deployments.readDeploymentFromList(this.http, id);
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

  /** GET /v2/deployments/{deployment_id}/revisions/{revision_id} (beyond the interface; docs/against-the-real-service.md §6). Retried like every GET. */
  async getRevision(deploymentId: string, revisionId: string): Promise<RevisionById> {
    return revisions.getRevision(this.http, deploymentId, revisionId);
  }

  /** GET /v2/deployments/{deployment_id}/revisions (beyond the spec): one page, newest first; undefined without the endpoint. */
  async listRevisions(
    deploymentId: string,
    query: { limit?: number; offset?: number; status?: string } = {},
  ): Promise<ListRevisionsResponse | undefined> {
    return revisions.listRevisions(this.http, deploymentId, query);
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
    return this.readLogs(logs.buildLogsEndpoint(deploymentId, revisionId), request);
  }

  /** POST /v1/projects/{deployment_id}/deploy_logs, or …/revisions/{revision_id}/deploy_logs for one revision (beyond the spec). */
  async deployLogs(deploymentId: string, request: LogRequest, revisionId?: string): Promise<LogRead> {
    return this.readLogs(logs.deployLogsEndpoint(deploymentId, revisionId), request);
  }

  /** One log page while the service has the log endpoints; the first answer that it has not is said once (onNotice). */
  private async readLogs(endpoint: LogEndpoint, request: LogRequest): Promise<LogRead> {
    if (this.logsAvailable === false) return { outcome: 'no-endpoint', status: 0 };
    const read = await logs.readLogPage(this.http, endpoint, request);
    if (read.outcome === 'found') this.logsAvailable = true;
    else if (read.outcome === 'no-endpoint' && this.logsAvailable === undefined) {
      this.logsAvailable = false;
      this.notice(
        `the service has no ${endpoint.route} (it answered ${read.status}): build and deploy logs cannot be shown, for the rest of this process`,
      );
    }
    return read;
  }

  /** Whether revisions can be read: undefined until the first readRevision tells. */
  get revisionReads(): boolean | undefined {
    return this.revisionReadsAvailable;
  }

  /** POST /v2/deployments (201). Not retried: the create job adopts on 409 after a lost answer. */
  async createDeployment(body: CreateDeploymentRequest): Promise<Deployment> {
    return deployments.createDeployment(this.http, body);
  }

  /** PATCH /v2/deployments/{deployment_id}. Not retried here. */
  async patchDeployment(id: string, body: PatchDeploymentRequest): Promise<Deployment> {
    return deployments.patchDeployment(this.http, id, body);
  }

  /**
   * DELETE /v2/deployments/{deployment_id} (beyond the spec; 204). `gone` when the service answers its own 404 (no such
   * id: deleted already) or 400 because the deployment is being deleted. Not retried here: the delete job re-reads
   * the id before it sends again.
   */
  async deleteDeployment(id: string, options: { deleteTracingProject: boolean }): Promise<'deleted' | 'gone'> {
    return deployments.deleteDeployment(this.http, id, options);
  }

  /**
   * Whether the service deletes deployments (DELETE /v2/deployments/{id}, beyond the spec), probed once per client
   * with an id no deployment has: the service's own "not found" says it has the endpoint; any other 404, or 405, says
   * it has not (then `deletes: false` with the note a plan shows). Nothing is deleted by the probe.
   */
  async deploymentDeletes(): Promise<DeploymentDeletes> {
    this.deleteProbe ??= deployments.probeDeploymentDeletes(this.http).catch((error: unknown) => {
      // A probe that failed (network, 5xx after retries) decides nothing: the next caller probes again.
      this.deleteProbe = undefined;
      throw error;
    });
    return this.deleteProbe;
  }

  /** DELETE /v2/auth/providers/{provider_id} (beyond the spec; 204); `gone` on 404. Not retried here. */
  async deleteProvider(providerId: string): Promise<'deleted' | 'gone'> {
    return providers.deleteProvider(this.http, providerId);
  }

  /** POST /v2/auth/providers. Not retried here. */
  async createProvider(body: CreateProviderRequest): Promise<OAuthProvider> {
    return providers.createProvider(this.http, body);
  }

  /** POST /v2/auth/providers/mcp-discover. Not retried here. */
  async discoverProvider(body: McpDiscoverRequest): Promise<OAuthProvider> {
    return providers.discoverProvider(this.http, body);
  }

  /**
   * GET /v2/auth/providers (beyond the spec): every provider of the organization, one request (the service answers a
   * plain array). A 404 or 405 means the service lacks the endpoint: the answer is `readable: false` with the note a
   * plan shows, and from then on this client sends no provider read again (probed once per process).
   */
  async listProviders(): Promise<LiveProviders> {
    if (this.providerAccess && !this.providerAccess.readable) return this.providerAccess;
    const listing = await providers.listProviders(this.http);
    this.providerAccess = listing.readable ? { readable: true } : listing;
    return listing;
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
    return providers.getProvider(this.http, providerId);
  }

  /** PATCH /v2/auth/providers/{provider_id} (beyond the spec). Not retried here. */
  async patchProvider(providerId: string, body: PatchProviderRequest): Promise<OAuthProvider> {
    return providers.patchProvider(this.http, providerId, body);
  }

  /** GET /v1/integrations/forge/codehost/install. */
  async listIntegrations(): Promise<Integration[]> {
    return integrations.listIntegrations(this.http);
  }

  /** GET /v1/integrations/forge/codehost/{integration_id}/repos. */
  async listRepositories(integrationId: string): Promise<Repository[]> {
    return integrations.listRepositories(this.http, integrationId);
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
