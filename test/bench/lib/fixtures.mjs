// Bench fixtures: N deployments as an emulator seed and as N manifest files (one per file), optionally changed.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const INTEGRATION_ID = '5f64863e-b7a7-42ff-9061-df5ae08380de';
export const REPO_COUNT = 50;
export const SECRET_ENV = 'BENCH_OPENAI_API_KEY';
export const SECRET_VALUE = 'bench-openai-key-value';
/** Deployments per folder of the manifest tree (teams). */
const PER_FOLDER = 100;

/** bench-00001 ... : fixed width, so a name_contains lookup matches exactly one deployment. */
export function deploymentName(i) {
  return `bench-${String(i + 1).padStart(5, '0')}`;
}

function repoName(i) {
  return `repo-${String(i % REPO_COUNT).padStart(3, '0')}`;
}

function repoUrl(i) {
  return `https://codehost.example.com/bench/${repoName(i)}`;
}

/** The live side: what the emulator starts with (max_scale 3 everywhere). */
export function benchSeed(n) {
  const start = Date.parse('2025-01-01T00:00:00Z');
  const deployments = [];
  for (let i = 0; i < n; i++) {
    deployments.push({
      name: deploymentName(i),
      source: 'codehost',
      source_config: {
        integration_id: INTEGRATION_ID,
        repo_url: repoUrl(i),
        build_on_push: true,
        resource_spec: { min_scale: 1, max_scale: 3, cpu: 1, memory_mb: 2048 },
      },
      source_revision_config: { repo_ref: 'main', graph_config_path: 'langgraph.json' },
      secrets: [{ name: 'OPENAI_API_KEY', value: SECRET_VALUE }],
      created_at: new Date(start + i * 1000).toISOString(),
      deployment_type: i % 10 === 0 ? 'prod' : 'dev',
    });
  }
  return {
    integrations: [
      {
        id: INTEGRATION_ID,
        installation_id: 40123001,
        name: 'bench',
        repositories: Array.from({ length: REPO_COUNT }, (_, r) => ({
          id: 710000 + r,
          name: repoName(r),
          default_branch: 'main',
        })),
      },
    ],
    deployments,
  };
}

/** The manifest of deployment i; `maxScale` 3 matches the seed, anything else is a change (a new revision). */
export function manifestText(i, maxScale = 3) {
  const name = deploymentName(i);
  return `apiVersion: converge/v1
kind: Deployment
metadata:
  name: ${name}
  annotations:
    team: team-${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}
spec:
  source: codehost
  source_config:
    integration_id: ${INTEGRATION_ID}
    repo_url: ${repoUrl(i)}
    build_on_push: true
    resource_spec:
      min_scale: 1
      max_scale: ${maxScale}
      cpu: 1
      memory_mb: 2048
  source_revision_config:
    repo_ref: main
    graph_config_path: langgraph.json
  secrets:
    - name: OPENAI_API_KEY
      valueFrom: { env: ${SECRET_ENV} }
`;
}

/** Relative path of deployment i's manifest: team-NNN/bench-NNNNN.yaml. */
export function manifestPath(i) {
  return join(`team-${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}`, `${deploymentName(i)}.yaml`);
}

/** Writes N manifest files under `dir`; the first `changed` of them declare max_scale 4 (an update each). */
export async function writeManifests(dir, n, changed = 0) {
  for (let f = 0; f * PER_FOLDER < n; f++)
    await mkdir(join(dir, `team-${String(f).padStart(3, '0')}`), { recursive: true });
  const lanes = 16;
  let next = 0;
  async function lane() {
    while (next < n) {
      const i = next++;
      await writeFile(join(dir, manifestPath(i)), manifestText(i, i < changed ? 4 : 3));
    }
  }
  await Promise.all(Array.from({ length: lanes }, lane));
}

/** The environment a converge process needs to resolve the manifests' secret. */
export function benchEnv(base = process.env) {
  return { ...base, [SECRET_ENV]: SECRET_VALUE };
}
