// Secrets on the worker side: job resources back to desired resources, desired hashes, and values only when sent.
import { UnrecoverableError } from 'bullmq';
import { resolve } from 'node:path';
import { resourceKey, type DesiredResource, type SecretRef, type SecretSource } from '../core/model.js';
import { CLIENT_SECRET } from '../plan/plan.js';
import { loadManifestDir } from '../observe/manifests.js';
import { hashDesiredSecrets, resolveSecretValue, secretSources } from '../secrets/resolve.js';
import { hasManifestSecrets } from '../enqueue/jobs.js';
import type { JobResource, JobSecretSource } from '../enqueue/schema.js';

export interface DesiredSecrets {
  /** secret name (CLIENT_SECRET for a provider) -> secretHash of the desired value. */
  hashes: Record<string, string>;
  /** Messages (never values) of secrets that could not be resolved. */
  errors: string[];
  /** Resolves the values of `names` just before a write; they live only in memory for that request. */
  values(names: readonly string[]): Promise<Record<string, string>>;
}

/** Hashes of every declared secret, and a resolver for values. */
export async function desiredSecrets(resource: DesiredResource, env: NodeJS.ProcessEnv): Promise<DesiredSecrets> {
  const hashed = hashDesiredSecrets(resource, env);
  return {
    hashes: hashed.hashes,
    errors: hashed.errors.map((e) => e.message),
    async values(names) {
      const out: Record<string, string> = {};
      const sources = secretSources(resource);
      for (const name of names) {
        const source = sources.find((s) => s.name === name)?.from;
        if (source) out[name] = resolveSecretValue(source, env);
      }
      return out;
    },
  };
}

/** Reads literal values back from the manifest that declares the resource (they never travel through Redis). */
async function literalValues(resource: JobResource, manifestDir: string | undefined): Promise<Map<string, string>> {
  const key = resourceKey(resource.kind, resource.name);
  if (!manifestDir) throw new UnrecoverableError(`${key}: the job has a literal secret but names no manifest directory to read it from`);
  const loaded = await loadManifestDir(resolve(manifestDir), { allowLiteralSecrets: true });
  const found = loaded.resources.find((r) => r.kind === resource.kind && r.name === resource.name);
  if (!found) {
    throw new UnrecoverableError(
      `${key}: its literal secret is read back from the manifests in ${manifestDir}, which no longer declare it; run apply again`,
    );
  }
  const values = new Map<string, string>();
  for (const { name, from } of secretSources(found)) if ('value' in from) values.set(name, from.value);
  return values;
}

function toSource(source: JobSecretSource, name: string, literals: Map<string, string> | undefined, key: string): SecretSource {
  if ('env' in source) return { env: source.env };
  if ('file' in source) return { file: source.file };
  const value = literals?.get(name);
  if (value === undefined) {
    throw new UnrecoverableError(`${key}: secret ${name} is no longer a literal value in ${source.manifest.file}; run apply again`);
  }
  return { value };
}

/**
 * The desired resource a job describes. Literal secret values (jobs carry only a pointer to the manifest)
 * are read back from the manifest directory named in the job.
 */
export async function fromJobResource(resource: JobResource, manifestDir: string | undefined): Promise<DesiredResource> {
  const key = resourceKey(resource.kind, resource.name);
  const literals = hasManifestSecrets(resource) ? await literalValues(resource, manifestDir) : undefined;
  if (resource.kind === 'Deployment') {
    const { secrets, ...spec } = resource.spec;
    const converted: SecretRef[] | undefined = secrets?.map((s) => ({ name: s.name, from: toSource(s.from, s.name, literals, key) }));
    return { ...resource, spec: { ...spec, ...(converted ? { secrets: converted } : {}) } } as unknown as DesiredResource;
  }
  const { client_secret, ...spec } = resource.spec;
  const secret = client_secret ? { client_secret: toSource(client_secret, CLIENT_SECRET, literals, key) } : {};
  return { ...resource, spec: { ...spec, ...secret } } as unknown as DesiredResource;
}
