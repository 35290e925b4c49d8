// The emulator's build and deploy logs (pure): the lines each phase prints as time passes, why a build failed, paging.
import { describe, expect, test } from 'vitest';
import { buildLog, deployLog, pageLogs, type LogEntry } from '../../src/emulator/logs.js';
import type { StoredDeployment, StoredRevision } from '../../src/emulator/records.js';

const START = 1_000_000;

function revision(overrides: Partial<StoredRevision> = {}): StoredRevision {
  return {
    id: 'rev-1',
    created_at: START,
    revision_source: 'internal_source',
    source_revision_config: { source_tarball_path: 'uploads/d/1.tar.gz', graph_config_path: 'langgraph.json' },
    build_started_at: START,
    build_ms: 900,
    ends_at: START + 900,
    outcome: 'DEPLOYED',
    failure: null,
    tracked_packages: ['langgraph:>=0.3'],
    install_command: 'uv sync',
    build_command: null,
    ...overrides,
  };
}

const deployment = {
  source: 'internal_source',
  source_config: {},
  secrets: [{ name: 'TOKEN', sha256: 'x', value: 'tok-1' }],
} as unknown as StoredDeployment;

describe('emulated logs', () => {
  test('build lines appear as the build goes; the deploy log follows the build phase', () => {
    const r = revision();
    const early = buildLog(deployment, r, { now: START, printSecrets: false });
    expect(early.map((e) => e.message)).toEqual(['Build of revision rev-1 started']);
    const done = buildLog(deployment, r, { now: START + 900, printSecrets: false }).map((e) => e.message);
    expect(done).toEqual([
      'Build of revision rev-1 started',
      'Downloading source tarball uploads/d/1.tar.gz',
      'Reading graph configuration langgraph.json',
      'Tracked packages: langgraph:>=0.3',
      'Installing dependencies: uv sync',
      'Build complete; image pushed',
    ]);
    expect(deployLog(r, START + 599)).toEqual([]);
    expect(
      deployLog(r, START + 900)
        .map((e) => e.message)
        .at(-1),
    ).toBe('Server listening on port 8000');
  });

  test('a failed build says why in its last lines; a tarball never uploaded too; --build-log-secrets prints the values', () => {
    const failed = buildLog(deployment, revision({ outcome: 'BUILD_FAILED', failure: 'build', ends_at: START + 600 }), {
      now: START + 600,
      printSecrets: true,
    });
    expect(failed.at(-1)).toMatchObject({ level: 'ERROR', message: 'Build failed: "uv sync" exited with status 1' });
    expect(failed.map((e) => e.message)).toContain('Environment: TOKEN=tok-1');
    const missing = buildLog(
      deployment,
      revision({ outcome: 'BUILD_FAILED', failure: 'tarball-missing', ends_at: START + 600 }),
      { now: START + 600, printSecrets: false },
    );
    expect(missing.at(-2)!.message).toBe(
      'Source tarball uploads/d/1.tar.gz not found: nothing was uploaded to its upload_url',
    );
    expect(deployLog(revision({ outcome: 'DEPLOY_FAILED', failure: 'deploy' }), START + 900).at(-1)!.message).toBe(
      'Deploy failed: the server never became healthy',
    );
  });

  test('paging: order, offset, limit, level, query and the time window', () => {
    const entries: LogEntry[] = Array.from({ length: 5 }, (_, i) => ({
      id: `e${i}`,
      timestamp: START + i * 10,
      level: i === 3 ? 'ERROR' : 'INFO',
      message: `line ${i}`,
    }));
    expect(pageLogs(entries, { limit: 2, order: 'desc', offset: 0 })).toEqual({
      logs: [entries[4], entries[3]],
      next_offset: '2',
    });
    expect(pageLogs(entries, { limit: 2, order: 'desc', offset: 2 }).logs.map((e) => e.id)).toEqual(['e2', 'e1']);
    expect(pageLogs(entries, { limit: 10, order: 'asc', offset: 3 })).toEqual({
      logs: [entries[3], entries[4]],
      next_offset: '5',
    });
    expect(pageLogs(entries, { limit: 10, order: 'asc', offset: 0, level: 'ERROR' }).logs.map((e) => e.id)).toEqual([
      'e3',
    ]);
    expect(pageLogs(entries, { limit: 10, order: 'asc', offset: 0, query: 'LINE 1' }).logs.map((e) => e.id)).toEqual([
      'e1',
    ]);
    expect(
      pageLogs(entries, { limit: 10, order: 'asc', offset: 0, startTime: START + 10, endTime: START + 30 }).logs.map(
        (e) => e.id,
      ),
    ).toEqual(['e1', 'e2', 'e3']);
  });
});
