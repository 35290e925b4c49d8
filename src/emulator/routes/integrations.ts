// Code-host routes: GET /v1/integrations/forge/codehost/install and GET .../{integration_id}/repos.
import { z } from 'zod';
import { replyFailure, type Route } from '../handler.js';
import { parseWith } from '../issues.js';
import { UuidText } from '../schema.js';
import type { EmulatorStore } from '../store.js';
import { integrationView, repositoryView } from '../view.js';

const IntegrationIdPath = z.object({
  integration_id: UuidText,
});

export function integrationRoutes(store: EmulatorStore): Route[] {
  const installs: Route = {
    method: 'GET',
    path: '/v1/integrations/forge/codehost/install',
    handle() {
      return { status: 200, body: store.integrations().map(integrationView) };
    },
  };

  const repos: Route = {
    method: 'GET',
    path: '/v1/integrations/forge/codehost/{integration_id}/repos',
    handle(ctx) {
      const path = parseWith(IntegrationIdPath, ctx.params, 'path');
      if (!path.ok) return replyFailure(path.error);
      const repositories = store.repositories(path.value.integration_id);
      if (!repositories) return { status: 404, body: { detail: `Integration ${path.value.integration_id} not found` } };
      return { status: 200, body: repositories.map(repositoryView) };
    },
  };

  return [installs, repos];
}
