// What the endpoint families of ServiceClient share: the routes, the answers by which the service says an id or an endpoint is absent, a write's secret values.

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

/** The detail of the service's 404 for a revision id it does not have. */
export const REVISION_NOT_FOUND = /^(Revision|Deployment) ID .* not found\.?$/;

/** The detail of the service's 404 for a deployment id it does not have (docs/against-the-real-service.md §1). */
export const DEPLOYMENT_NOT_FOUND = /^Deployment ID .* not found\.?$/;

/** Statuses by which a service says it lacks an endpoint beyond the spec. */
export const ABSENT_ENDPOINT = new Set([404, 405]);

/** Secret values a write carries: redacted from anything the service echoes back in an error. */
export function secretValues(body: {
  secrets?: Array<{ value: string }> | null;
  client_secret?: string | null;
}): string[] {
  const values = (body.secrets ?? []).map((s) => s.value);
  if (body.client_secret) values.push(body.client_secret);
  return values.filter((v) => v.length > 0);
}
