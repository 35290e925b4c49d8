// Deployment routes: the spec's POST, PATCH and list; beyond it (unless spec-only) GET by id, DELETE and the revisions.
import { z } from 'zod';
import { replyFailure, type Reply, type Route } from '../handler.js';
import { parseWith } from '../issues.js';
import { revisionStatusAt, type StoredDeployment } from '../records.js';
import { CreateBody, LenientCreateBody, PatchBody } from '../requests.js';
import { ListDeploymentsQuery, ListRevisionsQuery, UuidText } from '../schema.js';
import { notFound, type EmulatorStore } from '../store.js';
import { deploymentJsonCache, revisionView, type ViewOptions } from '../view.js';

const DeploymentIdPath = z.object({
  deployment_id: UuidText,
});

const RevisionIdPath = z.object({
  deployment_id: UuidText,
  revision_id: UuidText,
});

const BOOL_TRUE = ['true', '1', 'yes', 'on', 't', 'y'];

export interface DeploymentRouteOptions {
  store: EmulatorStore;
  view: ViewOptions;
  /** Serve at most this many per page whatever the limit. */
  pageCap?: number;
  /** Accept the old incomplete create bodies. */
  lenientCreate: boolean;
  /** Only the spec's endpoints: no GET by id, DELETE or revisions. */
  specOnly: boolean;
  clock: () => number;
}

/** A deployment answered with `status`, serialized through the view's cache. */
type DeploymentReply = (status: number, d: StoredDeployment) => Reply;

/** POST /v2/deployments. */
function createRoute(options: DeploymentRouteOptions, reply: DeploymentReply): Route {
  const { store } = options;
  const createSchema = options.lenientCreate ? LenientCreateBody : CreateBody;
  return {
    method: 'POST',
    path: '/v2/deployments',
    body: true,
    async handle(ctx) {
      const parsed = parseWith(createSchema, ctx.body, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      const created = store.createDeployment(ctx.tenant.id, parsed.value);
      if (!created.ok) return replyFailure(created.error);
      ctx.log.deploymentId = created.value.id;
      ctx.log.newRevision = created.value.latest_revision_id !== null;
      await ctx.persist();
      return reply(201, created.value);
    },
  };
}

/** PATCH /v2/deployments/{deployment_id}. */
function patchRoute(store: EmulatorStore, reply: DeploymentReply): Route {
  return {
    method: 'PATCH',
    path: '/v2/deployments/{deployment_id}',
    body: true,
    async handle(ctx) {
      const path = parseWith(DeploymentIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      ctx.log.deploymentId = path.value.deployment_id;
      const parsed = parseWith(PatchBody, ctx.body, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      // Read, merge and write happen in this one synchronous call: no other request can interleave.
      const patched = store.patchDeployment(ctx.tenant.id, path.value.deployment_id, parsed.value);
      if (!patched.ok) return replyFailure(patched.error);
      ctx.log.newRevision = patched.value.newRevision;
      if (patched.value.changed) await ctx.persist();
      return reply(200, patched.value.next);
    },
  };
}

/** GET /v2/deployments: one page, at most pageCap long. */
function listRoute(options: DeploymentRouteOptions, json: (d: StoredDeployment) => string): Route {
  const { store } = options;
  return {
    method: 'GET',
    path: '/v2/deployments',
    handle(ctx) {
      const parsed = parseWith(ListDeploymentsQuery, Object.fromEntries(ctx.query), 'query');
      if (!parsed.ok) return replyFailure(parsed.error);
      const { limit, offset, ...filter } = parsed.value;
      const size = options.pageCap !== undefined ? Math.min(limit, options.pageCap) : limit;
      const page = store.listDeployments(ctx.tenant.id, filter, offset, size);
      return { status: 200, json: `{"resources":[${page.map(json).join(',')}],"offset":${offset + page.length}}` };
    },
  };
}

/** GET /v2/deployments/{deployment_id} (beyond the spec). */
function readRoute(store: EmulatorStore, reply: DeploymentReply): Route {
  return {
    method: 'GET',
    path: '/v2/deployments/{deployment_id}',
    handle(ctx) {
      const path = parseWith(DeploymentIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      ctx.log.deploymentId = path.value.deployment_id;
      const d = store.deployment(ctx.tenant.id, path.value.deployment_id);
      if (!d) return { status: 404, body: { detail: notFound(path.value.deployment_id) } };
      return reply(200, d);
    },
  };
}

/** DELETE /v2/deployments/{deployment_id} (beyond the spec). */
function deleteRoute(store: EmulatorStore): Route {
  return {
    method: 'DELETE',
    path: '/v2/deployments/{deployment_id}',
    async handle(ctx) {
      const path = parseWith(DeploymentIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      ctx.log.deploymentId = path.value.deployment_id;
      const withProject = BOOL_TRUE.includes((ctx.query.get('delete_tracing_project') ?? '').toLowerCase());
      const deleted = store.deleteDeployment(ctx.tenant.id, path.value.deployment_id, withProject);
      if (!deleted.ok) return replyFailure(deleted.error);
      await ctx.persist();
      return { status: 204 };
    },
  };
}

/** GET /v2/deployments/{deployment_id}/revisions (beyond the spec): newest first, paged, by status. */
function revisionsRoute(options: DeploymentRouteOptions): Route {
  const { store } = options;
  return {
    method: 'GET',
    path: '/v2/deployments/{deployment_id}/revisions',
    handle(ctx) {
      const path = parseWith(DeploymentIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      const query = parseWith(ListRevisionsQuery, Object.fromEntries(ctx.query), 'query');
      if (!query.ok) return replyFailure(query.error);
      ctx.log.deploymentId = path.value.deployment_id;
      const d = store.deployment(ctx.tenant.id, path.value.deployment_id);
      if (!d) return { status: 404, body: { detail: notFound(path.value.deployment_id) } };
      const now = options.clock();
      const { limit, offset, status } = query.value;
      // Newest first.
      const matching = [...d.revisions]
        .reverse()
        .filter((r) => status === undefined || revisionStatusAt(r, now) === status);
      const page = matching.slice(offset, offset + limit);
      return {
        status: 200,
        body: { resources: page.map((r) => revisionView(d, r, now)), offset: offset + page.length },
      };
    },
  };
}

/** GET /v2/deployments/{deployment_id}/revisions/{revision_id} (beyond the spec). */
function revisionRoute(options: DeploymentRouteOptions): Route {
  const { store } = options;
  return {
    method: 'GET',
    path: '/v2/deployments/{deployment_id}/revisions/{revision_id}',
    handle(ctx) {
      const path = parseWith(RevisionIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      ctx.log.deploymentId = path.value.deployment_id;
      const d = store.deployment(ctx.tenant.id, path.value.deployment_id);
      if (!d) return { status: 404, body: { detail: notFound(path.value.deployment_id) } };
      const r = d.revisions.find((x) => x.id === path.value.revision_id);
      if (!r) return { status: 404, body: { detail: `Revision ID ${path.value.revision_id} not found.` } };
      return { status: 200, body: revisionView(d, r, options.clock()) };
    },
  };
}

export function deploymentRoutes(options: DeploymentRouteOptions): Route[] {
  const { store } = options;
  const json = deploymentJsonCache(options.view);
  const reply: DeploymentReply = (status, d) => ({ status, json: json(d) });
  const spec = [createRoute(options, reply), patchRoute(store, reply), listRoute(options, json)];
  if (options.specOnly) return spec;
  return [...spec, readRoute(store, reply), deleteRoute(store), revisionsRoute(options), revisionRoute(options)];
}
