// Deployment routes: POST /v2/deployments (201), PATCH /v2/deployments/{deployment_id}, GET /v2/deployments.
import { z } from 'zod';
import { CreateDeploymentRequest, PatchDeploymentRequest } from '../../core/wire/schema.js';
import { replyFailure, type Reply, type Route } from '../handler.js';
import { parseWith } from '../issues.js';
import type { StoredDeployment } from '../records.js';
import { ListDeploymentsQuery, UuidText } from '../schema.js';
import type { EmulatorStore } from '../store.js';
import { deploymentJsonCache, type SecretsMode } from '../view.js';

const DeploymentIdPath = z.object({
  deployment_id: UuidText,
});

export interface DeploymentRouteOptions {
  store: EmulatorStore;
  secrets: SecretsMode;
  /** Serve at most this many per page whatever the limit. */
  pageCap?: number;
}

export function deploymentRoutes(options: DeploymentRouteOptions): Route[] {
  const { store } = options;
  const json = deploymentJsonCache(options.secrets);
  const reply = (status: number, d: StoredDeployment): Reply => ({ status, json: json(d) });

  const create: Route = {
    method: 'POST',
    path: '/v2/deployments',
    body: true,
    async handle(ctx) {
      const parsed = parseWith(CreateDeploymentRequest, ctx.body, 'body');
      if (!parsed.ok) return replyFailure(parsed.error);
      const created = store.createDeployment(ctx.tenant.id, parsed.value);
      if (!created.ok) return replyFailure(created.error);
      ctx.log.deploymentId = created.value.id;
      ctx.log.newRevision = true;
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
      const parsed = parseWith(PatchDeploymentRequest, ctx.body, 'body');
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

  return [create, patch, list];
}
