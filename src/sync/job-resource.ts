// A job's resource back to the desired resource: references as they are, literal values only from the process that read them.
import { JobInputError } from '../core/errors.js';
import { kindOf, type JobResource, type JobSecretSource } from '../core/kinds/index.js';
import { formatLocation, resourceKey, type DesiredResource, type SecretSource } from '../core/model.js';
import { secretSources } from '../secrets/resolve.js';

/**
 * The literal value (--allow-literal-secrets) of secret `name` of resource `key`, or undefined. Only a process that
 * holds the desired resources in memory (the in-process workers of `converge apply`) has one: a literal value
 * never travels through Redis and no worker reads manifest files.
 */
export type LiteralSecrets = (key: string, name: string) => string | undefined;

/** The literal secret values of `resources`, held in this process's memory only. */
export function literalSecretsOf(resources: Iterable<DesiredResource>): LiteralSecrets | undefined {
  const values = new Map<string, string>();
  for (const resource of resources) {
    const key = resourceKey(resource.kind, resource.name);
    for (const { name, from } of secretSources(resource))
      if ('value' in from) values.set(`${key}\0${name}`, from.value);
  }
  if (values.size === 0) return undefined;
  return (key, name) => values.get(`${key}\0${name}`);
}

function fromJobSource(key: string, literals: LiteralSecrets | undefined) {
  return function fromJob(source: JobSecretSource, name: string): SecretSource {
    if ('env' in source) return { env: source.env };
    if ('file' in source) return { file: source.file };
    const at = formatLocation(source.manifest);
    if (!literals) {
      throw new JobInputError(
        `${key}: secret ${name} is a literal value in the manifest (${at}, --allow-literal-secrets), which only the converge apply that read it can send; ` +
          'run converge apply --allow-literal-secrets with its own workers, or give the secret a valueFrom (env or file)',
      );
    }
    const value = literals(key, name);
    if (value === undefined)
      throw new JobInputError(`${key}: secret ${name} is no longer a literal value at ${at}; run apply again`);
    return { value };
  };
}

/** The desired resource a job describes; a literal secret is taken from `literals` (see LiteralSecrets). */
export function fromJobResource(resource: JobResource, literals?: LiteralSecrets): DesiredResource {
  const key = resourceKey(resource.kind, resource.name);
  return kindOf(resource.kind).fromJobPayload(resource, fromJobSource(key, literals));
}
