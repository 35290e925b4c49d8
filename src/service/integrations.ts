// The code host integration endpoints of ServiceClient: the installed integrations and each one's repositories.
import { z } from 'zod';
import { Integration, Repository } from '../core/wire/schema.js';
import { ROUTES } from './endpoints.js';
import type { HttpTransport } from './transport.js';

const IntegrationList = z.array(Integration);
const RepositoryList = z.array(Repository);

/** GET /v1/integrations/forge/codehost/install. */
export async function listIntegrations(http: HttpTransport): Promise<Integration[]> {
  return http.send({ method: 'GET', route: ROUTES.integrations, path: ROUTES.integrations, schema: IntegrationList });
}

/** GET /v1/integrations/forge/codehost/{integration_id}/repos. */
export async function listRepositories(http: HttpTransport, integrationId: string): Promise<Repository[]> {
  return http.send({
    method: 'GET',
    route: ROUTES.repositories,
    path: `/v1/integrations/forge/codehost/${encodeURIComponent(integrationId)}/repos`,
    schema: RepositoryList,
  });
}
