// Convergence against the emulator behaving as the real service (--echo real, --secrets-patch replace, masked secrets,
// with and without --spec-only): one apply, then five resync cycles of the daemon send nothing, every declared
// secret keeps its value, plan --detailed-exitcode is 0; rotating one secret is one PATCH, one revision, no loss.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startEmulator,
  type EmulatorSeed,
  type RequestLogEntry,
  type RunningEmulator,
} from '../../src/emulator/server.js';
import { ACME, deploymentYaml, runApplyCli } from '../helpers/apply.js';
import {
  dropPrefix,
  killAllConverge,
  REDIS_URL,
  runConverge,
  tempDir,
  testPrefix,
  until,
  writeFiles,
} from './helpers.js';
import { daemonOf } from './scoped.js';

const VALUES = {
  OPENAI: 'sk-openai-real-7c2e',
  ANTHROPIC: 'sk-ant-real-19fa',
  LANGSMITH: 'ls-real-4b8d',
  DB: 'db-password-real-0e6a',
  TOKEN: 'api-token-real-a3c1',
};

function secretLines(pairs: Array<[name: string, env: keyof typeof VALUES]>): string[] {
  return ['secrets:', ...pairs.flatMap(([name, env]) => [`  - name: ${name}`, `    valueFrom: { env: ${env} }`])];
}

/** Every source kind, every field the real service echoes in its own form, resource_spec and several secrets. */
function manifests(): Record<string, string> {
  return {
    'support-agent.yaml': deploymentYaml(
      'support-agent',
      [
        'source: codehost',
        'repository: acme/support-agent',
        'source_config:',
        '  build_on_push: true',
        '  custom_url: https://support.acme.example.com',
        '  listener_config: { k8s_namespace: agents }',
        '  install_command: pip install -e .',
        '  build_command: make build',
        '  resource_spec: { min_scale: 1, max_scale: 4, cpu: 1, memory_mb: 2048 }',
        'source_revision_config:',
        '  graph_config_path: agent/graph.json',
        ...secretLines([
          ['OPENAI_API_KEY', 'OPENAI'],
          ['ANTHROPIC_API_KEY', 'ANTHROPIC'],
          ['LANGSMITH_API_KEY', 'LANGSMITH'],
        ]),
      ].join('\n'),
    ),
    'triage.yaml': deploymentYaml(
      'triage',
      [
        'source: external_docker',
        'source_config:',
        '  listener_config: { k8s_namespace: triage }',
        '  resource_spec: { max_scale: 3, memory_mb: 1024 }',
        'source_revision_config:',
        '  image_uri: docker.io/acme/triage:1.4.2',
        ...secretLines([
          ['DB_PASSWORD', 'DB'],
          ['API_TOKEN', 'TOKEN'],
        ]),
      ].join('\n'),
    ),
    'builder.yaml': deploymentYaml(
      'builder',
      [
        'source: internal_docker',
        'source_config:',
        '  listener_config: { k8s_namespace: builders }',
        '  build_command: docker build .',
        '  resource_spec: { max_scale: 2 }',
        'source_revision_config:',
        '  image_uri: registry.internal.example.com/acme/builder:7',
        ...secretLines([['API_TOKEN', 'TOKEN']]),
      ].join('\n'),
    ),
    'notebook.yaml': deploymentYaml(
      'notebook',
      [
        'source: internal_source',
        'source_config:',
        '  install_command: uv sync',
        '  resource_spec: { max_scale: 1 }',
        'source_revision_config:',
        '  source_tarball_path: uploads/acme/notebook-3.tar.gz',
        '  graph_config_path: graph.json',
        ...secretLines([
          ['OPENAI_API_KEY', 'OPENAI'],
          ['LANGSMITH_API_KEY', 'LANGSMITH'],
        ]),
      ].join('\n'),
    ),
  };
}

const DECLARED: Record<string, Record<string, keyof typeof VALUES>> = {
  'support-agent': { OPENAI_API_KEY: 'OPENAI', ANTHROPIC_API_KEY: 'ANTHROPIC', LANGSMITH_API_KEY: 'LANGSMITH' },
  triage: { DB_PASSWORD: 'DB', API_TOKEN: 'TOKEN' },
  builder: { API_TOKEN: 'TOKEN' },
  notebook: { OPENAI_API_KEY: 'OPENAI', LANGSMITH_API_KEY: 'LANGSMITH' },
};

/**
 * The deployments already exist (created earlier by another client): older max_scale, secrets set (one stale), and
 * triage carries a secret no manifest declares. Seeded, so this test does not depend on converge's create path.
 */
function seed(): EmulatorSeed {
  return {
    integrations: [
      {
        id: ACME,
        installation_id: 101,
        name: 'acme',
        repositories: [{ id: 1, name: 'support-agent', default_branch: 'main' }],
      },
    ],
    deployments: [
      {
        name: 'support-agent',
        source: 'codehost',
        source_config: {
          integration_id: ACME,
          repo_url: 'https://codehost.example.com/acme/support-agent',
          build_on_push: true,
          listener_config: { k8s_namespace: 'agents' },
          resource_spec: { min_scale: 1, max_scale: 2, cpu: 1, memory_mb: 2048 },
        },
        source_revision_config: { repo_ref: 'main', graph_config_path: 'agent/graph.json' },
        secrets: [
          { name: 'OPENAI_API_KEY', value: 'sk-openai-stale' },
          { name: 'ANTHROPIC_API_KEY', value: VALUES.ANTHROPIC },
        ],
      },
      {
        name: 'triage',
        source: 'external_docker',
        source_config: {
          listener_config: { k8s_namespace: 'triage' },
          resource_spec: { max_scale: 2, memory_mb: 1024 },
        },
        source_revision_config: { image_uri: 'docker.io/acme/triage:1.4.2' },
        secrets: [
          { name: 'DB_PASSWORD', value: VALUES.DB },
          { name: 'LEGACY_TOKEN', value: 'legacy-value' },
        ],
      },
      {
        name: 'builder',
        source: 'internal_docker',
        source_config: { listener_config: { k8s_namespace: 'builders' }, resource_spec: { max_scale: 2 } },
        source_revision_config: { image_uri: 'registry.internal.example.com/acme/builder:7' },
      },
      {
        name: 'notebook',
        source: 'internal_source',
        source_config: { resource_spec: { max_scale: 1 } },
        source_revision_config: {
          source_tarball_path: 'uploads/acme/notebook-3.tar.gz',
          graph_config_path: 'graph.json',
        },
        secrets: [{ name: 'OPENAI_API_KEY', value: VALUES.OPENAI }],
      },
    ],
  };
}

function writesIn(log: readonly RequestLogEntry[]): RequestLogEntry[] {
  return log.filter((e) => e.method !== 'GET');
}

/** Names of the secrets a logged write carried (values are redacted in the log). */
function sentSecretNames(entry: RequestLogEntry): string[] {
  const secrets = (entry.body as { secrets?: Array<{ name: string }> } | undefined)?.secrets ?? [];
  return secrets.map((s) => s.name).sort();
}

interface ResyncStatus {
  resync: { cyclesRun: string[] };
  history: Array<{ trigger: string; ok: boolean; cycle?: string }>;
}

afterAll(async () => {
  await killAllConverge();
});

// The two variants run side by side (each has its own emulator, directory and prefix); within one, the tests build on
// each other and run in order.
for (const specOnly of [false, true]) {
  describe.concurrent(
    `against the real service's behaviour (echo real, secrets replace, masked${specOnly ? ', spec only' : ''})`,
    () => {
      let emulator: RunningEmulator;
      let dir: string;
      const prefix = testPrefix(`real-converge${specOnly ? '-spec' : ''}`);
      const env: Record<string, string> = { ...VALUES };
      const base = (): string[] => [dir, '--api-url', emulator.url, '--redis-url', REDIS_URL, '--redis-prefix', prefix];
      const stored = (name: string) => emulator.store.allDeployments().find((d) => d.name === name)!;
      const nameOf = (entry: RequestLogEntry) =>
        emulator.store.allDeployments().find((d) => d.id === entry.deploymentId)!.name;

      beforeAll(async () => {
        emulator = await startEmulator({
          seed: seed(),
          buildMs: 0,
          echo: 'real',
          secretsPatch: 'replace',
          secrets: 'masked',
          specOnly,
        });
        dir = await tempDir('real-converge');
        await writeFiles(dir, manifests());
      }, 60_000);

      afterAll(async () => {
        await emulator?.close();
        await dropPrefix(prefix);
        if (dir) await rm(dir, { recursive: true, force: true });
      });

      it.sequential('the first plan notes the secret no manifest declares, which the write may drop', async () => {
        const run = await runConverge(['plan', ...base()], env);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toContain(
          'secret LEGACY_TOKEN is set on the service but declared in no manifest: not managed by converge; this write sends the complete set of declared secrets, and the service may drop it',
        );
      });

      it.sequential(
        'one apply, then five resync cycles: zero writes, every declared secret kept with its value, plan --detailed-exitcode 0',
        async (t) => {
          const applied = await runApplyCli(base(), env);
          expect(applied.code, applied.stdout + applied.stderr).toBe(0);
          const first = writesIn(emulator.requestLog);
          // One PATCH per deployment, each carrying the complete declared set of secrets (no create: all were seeded).
          expect(first.map((e) => `${e.method} ${nameOf(e)}`).sort()).toEqual([
            'PATCH builder',
            'PATCH notebook',
            'PATCH support-agent',
            'PATCH triage',
          ]);
          for (const entry of first)
            expect(sentSecretNames(entry)).toEqual(Object.keys(DECLARED[nameOf(entry)]!).sort());

          const quietFrom = emulator.requestLog.length;
          const daemon = await daemonOf(t, dir, [...base().slice(1), '--resync', '1s', '--log-level', 'warn'], env);
          const cycles = async () => ((await daemon.status()) as unknown as ResyncStatus).resync.cyclesRun.length;
          const startCycles = await cycles();
          await until('five resync cycles', async () => (await cycles()) >= startCycles + 5, 30_000, 200);
          await until(
            'the fifth resync reconcile to end',
            async () => {
              const status = (await daemon.status()) as unknown as ResyncStatus;
              return status.history.filter((h) => h.trigger === 'resync').length >= 5;
            },
            15_000,
            200,
          );
          const status = (await daemon.status()) as unknown as ResyncStatus;
          expect(status.history.filter((h) => h.trigger === 'resync').every((h) => h.ok)).toBe(true);
          daemon.child.kill('SIGTERM');
          await daemon.exited;
          expect(writesIn(emulator.requestLog.slice(quietFrom))).toEqual([]);

          for (const [name, secrets] of Object.entries(DECLARED)) {
            const live = new Map(stored(name).secrets.map((s) => [s.name, s.value]));
            for (const [secret, envName] of Object.entries(secrets))
              expect(live.get(secret), `${name} ${secret}`).toBe(VALUES[envName]);
          }
          // The service replaced triage's set with the declared one, as the plan's note warned.
          expect(
            stored('triage')
              .secrets.map((s) => s.name)
              .sort(),
          ).toEqual(['API_TOKEN', 'DB_PASSWORD']);

          const plan = await runConverge(['plan', ...base(), '--detailed-exitcode'], env);
          expect(plan.code, plan.stdout + plan.stderr).toBe(0);
          expect(plan.stdout).toContain('No changes.');
          expect(plan.stdout).toContain('Notes (unchanged):');
          expect(plan.stdout).toContain(
            'Deployment/support-agent: the service reports source_config.custom_url as "https://support-agent-',
          );
          expect(plan.stdout).toContain(
            'source_config.listener_config as null, source_config.install_command as null, source_config.build_command as null',
          );
          expect(writesIn(emulator.requestLog.slice(quietFrom))).toEqual([]);
        },
        120_000,
      );

      it.sequential(
        'rotating one secret is one PATCH carrying every declared secret and one revision; none is lost',
        async () => {
          const before = stored('support-agent');
          const revisions = before.revisions.length;
          const quietFrom = emulator.requestLog.length;
          const rotated = { ...env, ANTHROPIC: 'sk-ant-rotated-5d0b' };
          const run = await runApplyCli(base(), rotated);
          expect(run.code, run.stdout + run.stderr).toBe(0);
          const writes = writesIn(emulator.requestLog.slice(quietFrom));
          expect(writes).toHaveLength(1);
          expect(writes[0]!.method).toBe('PATCH');
          expect(writes[0]!.deploymentId).toBe(before.id);
          expect(writes[0]!.newRevision).toBe(true);
          expect(sentSecretNames(writes[0]!)).toEqual(['ANTHROPIC_API_KEY', 'LANGSMITH_API_KEY', 'OPENAI_API_KEY']);
          const after = stored('support-agent');
          expect(after.revisions.length).toBe(revisions + 1);
          expect(Object.fromEntries(after.secrets.map((s) => [s.name, s.value]))).toEqual({
            OPENAI_API_KEY: VALUES.OPENAI,
            ANTHROPIC_API_KEY: 'sk-ant-rotated-5d0b',
            LANGSMITH_API_KEY: VALUES.LANGSMITH,
          });
          // The plan listed only the rotated secret as a change, and said the others go with it.
          expect(run.stdout).not.toContain('OPENAI_API_KEY');
          const plan = await runConverge(['plan', ...base(), '--detailed-exitcode'], rotated);
          expect(plan.code, plan.stdout).toBe(0);
        },
        60_000,
      );
    },
  );
}
