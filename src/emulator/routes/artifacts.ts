// Routes beyond the spec the official deploy tool uses (docs/official-tool.md): push token, upload URL, build and deploy logs.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { replyFailure, type Reply, type Route, type RouteContext } from '../handler.js';
import { parseWith } from '../issues.js';
import { buildLog, deploymentDeployLog, deployLog, LOG_LEVELS, pageLogs, type LogQuery } from '../logs.js';
import type { StoredDeployment, StoredRevision } from '../records.js';
import { UuidText } from '../schema.js';
import { notFound, type EmulatorStore } from '../store.js';
import { UPLOAD_PATH_PREFIX } from '../uploads.js';

export interface ArtifactRouteOptions {
  store: EmulatorStore;
  clock: () => number;
  /** --build-log-secrets: build logs print the deployment's environment. */
  printSecrets: boolean;
}

const DeploymentIdPath = z.object({ deployment_id: UuidText });
const ProjectPath = z.object({ project_id: UuidText });
const ProjectRevisionPath = z.object({ project_id: UuidText, revision_id: UuidText });

const IsoTime = z.iso.datetime({ offset: true }).transform((v) => Date.parse(v));

/** The body of the log endpoints (against-the-real-service.md); everything optional. */
const LogBody = z
  .strictObject({
    limit: z.number().int().min(1).max(1000).default(100),
    order: z.enum(['asc', 'desc']).default('desc'),
    offset: z.union([z.string().regex(/^\d+$/), z.number().int().nonnegative()]).nullish(),
    level: z
      .string()
      .transform((v) => v.toUpperCase())
      .pipe(z.enum(LOG_LEVELS))
      .nullish(),
    query: z.string().nullish(),
    start_time: IsoTime.nullish(),
    end_time: IsoTime.nullish(),
  })
  .nullish();

function logQuery(body: z.infer<typeof LogBody>): LogQuery {
  const b = body ?? { limit: 100, order: 'desc' as const };
  return {
    limit: b.limit,
    order: b.order,
    offset: b.offset == null ? 0 : Number(b.offset),
    level: b.level ?? undefined,
    query: b.query ?? undefined,
    startTime: b.start_time ?? undefined,
    endTime: b.end_time ?? undefined,
  };
}

type Found<T> = { ok: true; value: T } | { ok: false; reply: Reply };

/** The deployment of the path, or the 404 the service answers. */
function findDeployment(store: EmulatorStore, ctx: RouteContext, id: string): Found<StoredDeployment> {
  ctx.log.deploymentId = id;
  const d = store.deployment(ctx.tenant.id, id);
  return d ? { ok: true, value: d } : { ok: false, reply: { status: 404, body: { detail: notFound(id) } } };
}

/** The revision of the path, or the 404 the service answers. */
function findRevision(d: StoredDeployment, revisionId: string): Found<StoredRevision> {
  const r = d.revisions.find((x) => x.id === revisionId);
  return r
    ? { ok: true, value: r }
    : { ok: false, reply: { status: 404, body: { detail: `Revision ID ${revisionId} not found.` } } };
}

/** 400 when the deployment is not of `source` (the official tool tells its own message apart by this text), or is being deleted. */
function sourceProblem(d: StoredDeployment, source: string, what: string): Reply | null {
  if (d.status === 'AWAITING_DELETE')
    return { status: 400, body: { detail: `Deployment ID ${d.id} is being deleted.` } };
  if (d.source !== source)
    return {
      status: 400,
      body: {
        detail: `${what} is only available for '${source}' source deployments (deployment ${d.id} is ${d.source})`,
      },
    };
  return null;
}

/** The deployment an artifact route's path names, when it is of `source` and not being deleted; else the reply the service gives. */
function artifactDeployment(
  store: EmulatorStore,
  ctx: RouteContext,
  source: string,
  what: string,
): Found<StoredDeployment> {
  const path = parseWith(DeploymentIdPath, ctx.params, 'path');
  if (!path.ok) return { ok: false, reply: replyFailure(path.error) };
  const found = findDeployment(store, ctx, path.value.deployment_id);
  if (!found.ok) return found;
  const problem = sourceProblem(found.value, source, what);
  return problem ? { ok: false, reply: problem } : found;
}

/** The artifact endpoints of the official deploy tool: a push token (internal_docker) and an upload URL (internal_source). */
export function artifactRoutes(options: ArtifactRouteOptions): Route[] {
  const { store } = options;

  const pushToken: Route = {
    method: 'POST',
    path: '/v2/deployments/{deployment_id}/push-token',
    body: true,
    handle(ctx) {
      const found = artifactDeployment(store, ctx, 'internal_docker', 'A push token');
      if (!found.ok) return found.reply;
      const d = found.value;
      // The emulator runs no registry: the token and address are what a client needs to go on; nothing serves them.
      return {
        status: 200,
        body: {
          token: randomBytes(24).toString('base64url'),
          registry_url: `registry.emulator.invalid/${d.tenant_id}/${d.id}`,
        },
      };
    },
  };

  const uploadUrl: Route = {
    method: 'POST',
    path: '/v2/deployments/{deployment_id}/upload-url',
    body: true,
    async handle(ctx) {
      const found = artifactDeployment(store, ctx, 'internal_source', 'An upload URL');
      if (!found.ok) return found.reply;
      const d = found.value;
      const issued = store.issueUpload(d.id);
      await ctx.persist();
      return {
        status: 200,
        body: { upload_url: `${ctx.origin}${UPLOAD_PATH_PREFIX}${issued.token}`, object_path: issued.object_path },
      };
    },
  };

  return [pushToken, uploadUrl];
}

/** What a revision's log is made of: its deployment, the revision, and the emulator's clock now. */
type RevisionLog = (
  d: Parameters<typeof buildLog>[0],
  r: Parameters<typeof buildLog>[1],
  now: number,
) => ReturnType<typeof deployLog>;

/** `POST /v1/projects/{project_id}/revisions/{revision_id}/<log>`: path and body checked, the revision found, its log paged. */
function revisionLogRoute(
  options: ArtifactRouteOptions,
  log: 'build_logs' | 'deploy_logs',
  entriesOf: RevisionLog,
): Route {
  return {
    method: 'POST',
    path: `/v1/projects/{project_id}/revisions/{revision_id}/${log}`,
    body: true,
    handle(ctx) {
      const path = parseWith(ProjectRevisionPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      const body = parseWith(LogBody, ctx.body, 'body');
      if (!body.ok) return replyFailure(body.error);
      const found = findDeployment(options.store, ctx, path.value.project_id);
      if (!found.ok) return found.reply;
      const revision = findRevision(found.value, path.value.revision_id);
      if (!revision.ok) return revision.reply;
      return {
        status: 200,
        body: pageLogs(entriesOf(found.value, revision.value, options.clock()), logQuery(body.value)),
      };
    },
  };
}

/** The log endpoints (`POST /v1/projects/...`): build logs of a revision, deploy logs of a revision or a deployment. */
export function logRoutes(options: ArtifactRouteOptions): Route[] {
  const { store } = options;

  const buildLogs = revisionLogRoute(options, 'build_logs', (d, r, now) =>
    buildLog(d, r, { now, printSecrets: options.printSecrets }),
  );
  const revisionDeployLogs = revisionLogRoute(options, 'deploy_logs', (_d, r, now) => deployLog(r, now));

  const deployLogs: Route = {
    method: 'POST',
    path: '/v1/projects/{project_id}/deploy_logs',
    body: true,
    handle(ctx) {
      const path = parseWith(ProjectPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      const body = parseWith(LogBody, ctx.body, 'body');
      if (!body.ok) return replyFailure(body.error);
      const found = findDeployment(store, ctx, path.value.project_id);
      if (!found.ok) return found.reply;
      return { status: 200, body: pageLogs(deploymentDeployLog(found.value, options.clock()), logQuery(body.value)) };
    },
  };

  return [buildLogs, revisionDeployLogs, deployLogs];
}
