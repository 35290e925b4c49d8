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

export function deploymentRoutes(options: DeploymentRouteOptions): Route[] {
  const { store } = options;
  const json = deploymentJsonCache(options.view);
  const reply = (status: number, d: StoredDeployment): Reply => ({ status, json: json(d) });
  const createSchema = options.lenientCreate ? LenientCreateBody : CreateBody;

  const create: Route = {
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

  const patch: Route = {
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

  const list: Route = {
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

  if (options.specOnly) return [create, patch, list];

  const read: Route = {
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

  const remove: Route = {
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

  const revisions: Route = {
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
      const matching = [...d.revisions].reverse().filter((r) => status === undefined || revisionStatusAt(r, now) === status);
      const page = matching.slice(offset, offset + limit);
      return { status: 200, body: { resources: page.map((r) => revisionView(d, r, now)), offset: offset + page.length } };
    },
  };

  const revision: Route = {
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

  return [create, patch, list, read, remove, revisions, revision];
}
