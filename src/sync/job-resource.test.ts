// Job resources back to desired ones: references as they are, a literal value only from the process that read it.
import { describe, expect, it } from 'vitest';
import { JobInputError } from '../core/errors.js';
import { JobResource, kindOf } from '../core/kinds/index.js';
import type { DeploymentResource, DesiredResource, ProviderResource } from '../core/model.js';
import { fromJobResource, literalSecretsOf } from './job-resource.js';

const VALUE = 'planted-literal-5e0d';

const deployment: DeploymentResource = {
  kind: 'Deployment',
  name: 'web',
  location: { file: 'web.yaml', line: 1, column: 1 },
  suspend: false,
  spec: {
    source: 'external_docker',
    source_revision_config: { image_uri: 'docker.io/acme/web:1' },
    secrets: [
      { name: 'FROM_ENV', from: { env: 'WEB_TOKEN' } },
      { name: 'LITERAL', from: { value: VALUE } },
    ],
  },
  secretLocations: { LITERAL: { file: 'web.yaml', line: 9, column: 12 } },
};

const provider: ProviderResource = {
  kind: 'OAuthProvider',
  name: 'slack',
  location: { file: 'slack.yaml', line: 1, column: 1 },
  suspend: false,
  spec: {
    mode: 'manual',
    name: 'Slack',
    client_id: 'c',
    auth_url: 'https://a.example/a',
    token_url: 'https://a.example/t',
    client_secret: { env: 'SLACK_SECRET' },
  },
};

function toJobResource(resource: DesiredResource): JobResource {
  return JobResource.parse(kindOf(resource.kind).jobPayload(resource));
}

describe('fromJobResource', () => {
  it('takes a literal from the values the process read, and gives back the resource as loaded', () => {
    const literals = literalSecretsOf([deployment, provider]);
    expect(literals).toBeDefined();
    expect(fromJobResource(toJobResource(deployment), literals)).toEqual(deployment);
    expect(fromJobResource(toJobResource(provider), literals)).toEqual(provider);
  });

  it('without literal values, fails a job that carries one, naming --allow-literal-secrets and the place, never the value', () => {
    const job = toJobResource(deployment);
    const failure = (() => {
      try {
        fromJobResource(job);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(failure).toBeInstanceOf(JobInputError);
    expect((failure as Error).message).toContain(
      'Deployment/web: secret LITERAL is a literal value in the manifest (web.yaml:9:12, --allow-literal-secrets)',
    );
    expect((failure as Error).message).not.toContain(VALUE);
    // references alone need no literal values
    expect(fromJobResource(toJobResource(provider))).toEqual(provider);
  });

  it('has no literal values to hold when no resource declares one', () => {
    expect(literalSecretsOf([provider])).toBeUndefined();
    const changed = literalSecretsOf([{ ...deployment, spec: { ...deployment.spec, secrets: [] } }]);
    expect(changed).toBeUndefined();
  });
});
