// The emulator's in-memory store: deployments by id, per-tenant name index and ordered list, providers, integrations.
import { randomUUID } from 'node:crypto';
import { isPending, lowerBound, pageOf, type DeploymentFilter } from './deployment-list.js';
import { fail, ok, type Result } from './issues.js';
import {
  mergePatch,
  newDeployment,
  type PatchOutcome,
  type RevisionOutcome,
  type SecretsPatchMode,
  type WriteContext,
} from './merge.js';
import { newProvider, patchedProvider, type ProviderInput } from './provider-records.js';
import type { CreateBody, PatchBody, ProviderPatchBody } from './requests.js';
import {
  compareDeployments,
  advanceDeployment,
  type StoredDeployment,
  type StoredIntegration,
  type StoredProvider,
  type StoredRepository,
  type StoredTenant,
  type StoredTracingProject,
} from './records.js';
import type { StateUpload } from './schema.js';
import { UploadRegistry, type IssuedUpload } from './upload-registry.js';
import type { RepoLookup } from './validate.js';

interface TenantSpace {
  tenant: StoredTenant;
  /** Deployments in list order (created_at, then id). */
  ordered: StoredDeployment[];
  byName: Map<string, StoredDeployment>;
  tracing: Map<string, StoredTracingProject>;
}

export interface StoreInit {
  organizationId: string;
  tenants: StoredTenant[];
  integrations: StoredIntegration[];
  deployments: StoredDeployment[];
  providers: StoredProvider[];
  tracingProjects: StoredTracingProject[];
  clock: () => number;
  buildMs: number;
  secretsPatch: SecretsPatchMode;
  /** --lenient-create. */
  lenient: boolean;
  /** How a new revision of the named deployment ends. */
  outcome: (name: string) => RevisionOutcome;
  /** Tarball object paths handed out before (from the state file). */
  uploads: readonly StateUpload[];
  /** --any-tarball-path. */
  anyTarballPath: boolean;
}

/** The knobs of the write rules, as the store hands them to merge.ts. */
export type WriteKnobs = Pick<StoreInit, 'secretsPatch' | 'lenient' | 'outcome' | 'anyTarballPath'>;

export function notFound(deploymentId: string): string {
  return `Deployment ID ${deploymentId} not found.`;
}

export function providerNotFound(providerId: string): string {
  return `OAuth provider ${providerId} not found.`;
}

/**
 * All state of one emulated organization. Every method is synchronous, so a request's read-merge-write
 * of a deployment can never interleave with another's (no lost update).
 */
export class EmulatorStore {
  readonly organizationId: string;
  readonly buildMs: number;
  private readonly clock: () => number;
  private readonly knobs: WriteKnobs;
  private readonly spaces = new Map<string, TenantSpace>();
  private readonly tenantOrder: StoredTenant[];
  private readonly byId = new Map<string, StoredDeployment>();
  private readonly pending = new Set<string>();
  private readonly integrationList: StoredIntegration[];
  private readonly integrationsById = new Map<string, StoredIntegration>();
  private readonly repoUrls = new Map<string, Set<string>>();
  /** organization id -> provider_id -> provider. */
  private readonly providersByOrg = new Map<string, Map<string, StoredProvider>>();
  private readonly listeners: Array<() => void> = [];
  private readonly uploadRegistry: UploadRegistry;
  /** Bumped on every change; persistence and caches compare it. */
  version = 0;

  constructor(init: StoreInit) {
    this.organizationId = init.organizationId;
    this.clock = init.clock;
    this.buildMs = init.buildMs;
    this.knobs = {
      secretsPatch: init.secretsPatch,
      lenient: init.lenient,
      outcome: init.outcome,
      anyTarballPath: init.anyTarballPath,
    };
    this.uploadRegistry = new UploadRegistry(init.uploads);
    this.tenantOrder = init.tenants;
    for (const tenant of init.tenants) {
      this.spaces.set(tenant.id, { tenant, ordered: [], byName: new Map(), tracing: new Map() });
    }
    this.integrationList = init.integrations;
    for (const integration of init.integrations) {
      this.integrationsById.set(integration.id, integration);
      this.repoUrls.set(integration.id, new Set(integration.repositories.map((r) => r.url)));
    }
    for (const project of init.tracingProjects) this.space(project.tenant_id).tracing.set(project.name, project);
    for (const d of init.deployments) {
      const space = this.space(d.tenant_id);
      space.ordered.push(d);
      space.byName.set(d.name, d);
      this.byId.set(d.id, d);
      if (isPending(d)) this.pending.add(d.id);
    }
    for (const space of this.spaces.values()) space.ordered.sort(compareDeployments);
    for (const p of init.providers) this.orgProviders(p.organization_id).set(p.provider_id, p);
  }

  private space(tenantId: string): TenantSpace {
    const space = this.spaces.get(tenantId);
    if (!space) throw new Error(`unknown tenant ${tenantId}`);
    return space;
  }

  private orgProviders(organizationId: string): Map<string, StoredProvider> {
    let map = this.providersByOrg.get(organizationId);
    if (!map) {
      map = new Map();
      this.providersByOrg.set(organizationId, map);
    }
    return map;
  }

  /** Calls `listener` after every change (creates, patches, activations). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    this.version += 1;
    for (const listener of this.listeners) listener();
  }

  // ------------------------------------------------------------ tenants and integrations

  get defaultTenant(): StoredTenant {
    return this.tenantOrder[0]!;
  }

  tenants(): readonly StoredTenant[] {
    return this.tenantOrder;
  }

  tenant(id: string): StoredTenant | undefined {
    return this.spaces.get(id)?.tenant;
  }

  integrations(): readonly StoredIntegration[] {
    return this.integrationList;
  }

  repositories(integrationId: string): readonly StoredRepository[] | undefined {
    return this.integrationsById.get(integrationId)?.repositories;
  }

  readonly repoLookup: RepoLookup = {
    hasIntegration: (id) => this.integrationsById.has(id),
    hasRepository: (id, url) => this.repoUrls.get(id)?.has(url) ?? false,
  };

  // ------------------------------------------------------------ deployments

  /** Advances every revision whose build time has passed and removes deletions that are due. Returns true when anything changed. */
  advance(now = this.clock()): boolean {
    if (this.pending.size === 0) return false;
    let any = false;
    for (const id of this.pending) {
      const current = this.byId.get(id)!;
      if (current.delete_at !== null && now >= current.delete_at) {
        this.remove(current);
        any = true;
        continue;
      }
      const next = advanceDeployment(current, now);
      if (next === current) continue;
      this.pending.delete(id);
      this.replace(current, next);
      any = true;
    }
    if (any) this.changed();
    return any;
  }

  private replace(current: StoredDeployment, next: StoredDeployment): void {
    const space = this.space(current.tenant_id);
    const index = lowerBound(space.ordered, current);
    if (space.ordered[index] !== current) throw new Error(`deployment ${current.id} missing from the ordered list`);
    space.ordered[index] = next;
    space.byName.set(next.name, next);
    this.byId.set(next.id, next);
    if (isPending(next)) this.pending.add(next.id);
    else this.pending.delete(next.id);
  }

  /** A deletion is due: the deployment is gone; its tracing project stays (unlinked) unless the DELETE asked otherwise. */
  private remove(d: StoredDeployment): void {
    const space = this.space(d.tenant_id);
    const index = lowerBound(space.ordered, d);
    if (space.ordered[index] !== d) throw new Error(`deployment ${d.id} missing from the ordered list`);
    space.ordered.splice(index, 1);
    space.byName.delete(d.name);
    this.byId.delete(d.id);
    this.pending.delete(d.id);
    const project = space.tracing.get(d.name);
    if (project && project.deployment_id === d.id) {
      if (d.delete_tracing_project) space.tracing.delete(d.name);
      else space.tracing.set(d.name, { ...project, deployment_id: null });
    }
  }

  /** A deployment of the tenant by id, with any finished build applied. */
  deployment(tenantId: string, id: string): StoredDeployment | undefined {
    this.advance();
    const d = this.byId.get(id);
    return d && d.tenant_id === tenantId ? d : undefined;
  }

  deploymentByName(tenantId: string, name: string): StoredDeployment | undefined {
    this.advance();
    return this.spaces.get(tenantId)?.byName.get(name);
  }

  /** Every deployment of every tenant, in list order per tenant. */
  allDeployments(): StoredDeployment[] {
    this.advance();
    return [...this.spaces.values()].flatMap((s) => s.ordered);
  }

  tracingProjects(tenantId?: string): StoredTracingProject[] {
    this.advance();
    const spaces = tenantId ? [this.space(tenantId)] : [...this.spaces.values()];
    return spaces.flatMap((s) => [...s.tracing.values()]);
  }

  /** One page of the tenant's deployments matching `filter`, in list order. */
  listDeployments(tenantId: string, filter: DeploymentFilter, offset: number, limit: number): StoredDeployment[] {
    this.advance();
    const space = this.space(tenantId);
    return pageOf(space.ordered, (id) => this.byId.get(id), tenantId, filter, offset, limit);
  }

  private writeContext(): WriteContext {
    return {
      now: this.clock(),
      buildMs: this.buildMs,
      newId: randomUUID,
      repos: this.repoLookup,
      uploads: this.uploadRegistry,
      ...this.knobs,
    };
  }

  // ------------------------------------------------------------ artifacts (upload URLs)

  /** POST /v2/deployments/{id}/upload-url: a new object path for the deployment and the token of its one PUT. */
  issueUpload(deploymentId: string): IssuedUpload {
    const issued = this.uploadRegistry.issue(deploymentId);
    this.changed();
    return issued;
  }

  /** The PUT to a signed URL: spends its token; undefined for an unknown or spent token. */
  receiveUpload(token: string): string | undefined {
    const objectPath = this.uploadRegistry.receive(token);
    if (objectPath !== undefined) this.changed();
    return objectPath;
  }

  /** Every object path handed out, for the state file. */
  uploads(): StateUpload[] {
    return this.uploadRegistry.all();
  }

  /** POST /v2/deployments: 422/400 from the rules, 409 when a deployment or tracing project has the name. */
  createDeployment(tenantId: string, request: CreateBody): Result<StoredDeployment> {
    this.advance();
    const space = this.space(tenantId);
    const built = newDeployment(tenantId, request, this.writeContext());
    if (!built.ok) return built;
    const d = built.value;
    const existing = space.byName.get(d.name);
    if (existing) return fail(409, `A deployment named "${d.name}" already exists (id ${existing.id})`);
    if (space.tracing.has(d.name)) {
      return fail(
        409,
        `A tracing project named "${d.name}" already exists; a deployment creates a tracing project of its own name, so pick another name`,
      );
    }
    const last = space.ordered[space.ordered.length - 1];
    if (!last || compareDeployments(last, d) <= 0) space.ordered.push(d);
    else space.ordered.splice(lowerBound(space.ordered, d), 0, d);
    space.byName.set(d.name, d);
    this.byId.set(d.id, d);
    if (isPending(d)) this.pending.add(d.id);
    space.tracing.set(d.name, {
      id: randomUUID(),
      tenant_id: tenantId,
      name: d.name,
      created_at: d.created_at,
      deployment_id: d.id,
    });
    this.changed();
    return ok(d);
  }

  /** PATCH /v2/deployments/{id}: 404 for an unknown id (or one of another tenant), else mergePatch(). */
  patchDeployment(tenantId: string, id: string, patch: PatchBody): Result<PatchOutcome> {
    const current = this.deployment(tenantId, id);
    if (!current) return fail(404, notFound(id));
    const merged = mergePatch(current, patch, this.writeContext());
    if (!merged.ok || !merged.value.changed) return merged;
    this.replace(current, merged.value.next);
    this.changed();
    return merged;
  }

  /**
   * DELETE /v2/deployments/{id}: the deployment is AWAITING_DELETE for the build time, refusing writes,
   * then gone (at once with a build time of 0). 404 for an unknown id, 400 when it is already being deleted.
   */
  deleteDeployment(tenantId: string, id: string, deleteTracingProject: boolean): Result<StoredDeployment | null> {
    const current = this.deployment(tenantId, id);
    if (!current) return fail(404, notFound(id));
    if (current.status === 'AWAITING_DELETE') return fail(400, `Deployment ID ${id} is being deleted.`);
    const now = this.clock();
    const next: StoredDeployment = {
      ...current,
      status: 'AWAITING_DELETE',
      updated_at: now,
      build_ready_at: null,
      delete_at: now + this.buildMs,
      delete_tracing_project: deleteTracingProject,
    };
    this.replace(current, next);
    this.advance(now);
    this.changed();
    return ok(this.byId.get(id) ?? null);
  }

  // ------------------------------------------------------------ providers

  /** PATCH /v2/auth/providers/{provider_id}: absent fields are kept; code_challenge_method null means none. */
  patchProvider(organizationId: string, providerId: string, patch: ProviderPatchBody): Result<StoredProvider> {
    const current = this.provider(organizationId, providerId);
    if (!current) return fail(404, providerNotFound(providerId));
    const next = patchedProvider(current, patch);
    if (!next) return ok(current);
    const updated = { ...next, updated_at: this.clock() };
    this.orgProviders(organizationId).set(providerId, updated);
    this.changed();
    return ok(updated);
  }

  /** DELETE /v2/auth/providers/{provider_id}; 404 when the organization has no such provider. */
  deleteProvider(organizationId: string, providerId: string): Result<null> {
    const providers = this.orgProviders(organizationId);
    if (!providers.delete(providerId)) return fail(404, providerNotFound(providerId));
    this.changed();
    return ok(null);
  }

  provider(organizationId: string, providerId: string): StoredProvider | undefined {
    return this.providersByOrg.get(organizationId)?.get(providerId);
  }

  providers(organizationId?: string): StoredProvider[] {
    const maps = organizationId ? [this.orgProviders(organizationId)] : [...this.providersByOrg.values()];
    return maps.flatMap((m) => [...m.values()]);
  }

  /** Creates a provider in the organization; 409 when its provider_id exists there. */
  createProvider(organizationId: string, input: ProviderInput): Result<StoredProvider> {
    const providers = this.orgProviders(organizationId);
    if (providers.has(input.provider_id)) {
      return fail(409, `OAuth provider "${input.provider_id}" already exists in organization ${organizationId}`);
    }
    const now = this.clock();
    const provider = newProvider(organizationId, input, randomUUID(), now);
    providers.set(provider.provider_id, provider);
    this.changed();
    return ok(provider);
  }
}
