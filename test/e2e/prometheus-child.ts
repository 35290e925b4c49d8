// A real Prometheus (Debian's package) as a child process for the monitoring e2e: its own loopback port, data
// directory and config scraping converge daemons every second with examples/monitoring's rules, read over its HTTP API.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ruleGroups } from '../helpers/monitoring-files.js';
import { freePort, until } from './helpers.js';

/** Whether `prometheus` is on the PATH (the Debian package; .ci/run installs it). */
export function prometheusInstalled(): boolean {
  return spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

export interface PrometheusChild {
  url: string;
  /** The alerts pending or firing (GET /api/v1/alerts). */
  alerts(): Promise<Alert[]>;
  /** An instant query's result (GET /api/v1/query); throws with Prometheus' error when it refuses the expression. */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** What it printed (its log goes to stderr). */
  output(): string;
  close(): Promise<void>;
}

/**
 * The rules of examples/monitoring/converge-rules.yaml as a file for the test, each alert named in `forOf` with its
 * `for` replaced (the only change: same groups, expressions, labels and annotations).
 */
function rulesFor(forOf: Readonly<Record<string, string>>): string {
  const groups = ruleGroups().map((group) => ({
    ...group,
    rules: group.rules.map((rule) =>
      rule.alert && forOf[rule.alert] !== undefined ? { ...rule, for: forOf[rule.alert] } : rule,
    ),
  }));
  return stringify({ groups });
}

async function api<T>(url: string): Promise<T> {
  const answer = (await (await fetch(url)).json()) as { status: string; data: T; error?: string };
  if (answer.status !== 'success')
    throw new Error(`Prometheus answered ${answer.status}: ${answer.error ?? ''} (${url})`);
  return answer.data;
}

/** Starts Prometheus scraping `targets` (host:port, job "converge") every second, evaluating the rules every second. */
export async function startPrometheus(
  targets: string[],
  forOf: Readonly<Record<string, string>> = {},
): Promise<PrometheusChild> {
  const dir = await mkdtemp(join(tmpdir(), 'converge-prometheus-'));
  await writeFile(join(dir, 'rules.yaml'), rulesFor(forOf));
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
    rule_files: [join(dir, 'rules.yaml')],
    scrape_configs: [{ job_name: 'converge', static_configs: [{ targets }] }],
  };
  await writeFile(join(dir, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let output = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const url = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (alive) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await until(
      'Prometheus ready',
      async () => {
        if (!alive) throw new Error(`prometheus exited: ${output.slice(-2000)}`);
        return (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200;
      },
      30_000,
      100,
    );
  } catch (error) {
    await close();
    throw error;
  }
  return {
    url,
    async alerts() {
      return (await api<{ alerts: Alert[] }>(`${url}/api/v1/alerts`)).alerts;
    },
    async query(expr) {
      return (
        await api<{ result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
          `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
        )
      ).result;
    },
    output: () => output,
    close,
  };
}
