// The monitoring examples read for tests: the rules (examples/monitoring/converge-rules.yaml), the PrometheusRule and
// the Grafana dashboard, and every PromQL expression in them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { promqlNames } from './promql-names.js';

export const MONITORING = join(fileURLToPath(new URL('../..', import.meta.url)), 'examples', 'monitoring');

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** The groups of the plain rules file (or of another file in examples/monitoring with a top-level `groups`). */
export function ruleGroups(file = 'converge-rules.yaml'): RuleGroup[] {
  return (parse(readFileSync(join(MONITORING, file), 'utf8')) as { groups: RuleGroup[] }).groups;
}

export function alertRules(): Rule[] {
  return ruleGroups().flatMap((g) => g.rules.filter((r) => r.alert));
}

/** Each recording rule's name with the labels its series keep (the labels it groups by: an approximation that fits these rules). */
export function recordedNames(): Map<string, Set<string>> {
  const recorded = new Map<string, Set<string>>();
  for (const rule of ruleGroups().flatMap((g) => g.rules))
    if (rule.record) recorded.set(rule.record, promqlNames(rule.expr).grouping);
  return recorded;
}

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr?: string; refId?: string }>;
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown }> };
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as Dashboard;
}

/** Every panel, rows' nested panels included. */
export function dashboardPanels(board = dashboard()): Panel[] {
  return board.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/**
 * Every PromQL expression of the rules and the dashboard, named by where it is. A dashboard variable's
 * `label_values(METRIC, LABEL)` is read as `max by (LABEL) (METRIC)`, the names it reads.
 */
export function allExpressions(): Array<{ where: string; expr: string }> {
  const rules = ruleGroups().flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr })),
  );
  const board = dashboard();
  const panels = dashboardPanels(board).flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr ?? '' })),
  );
  const variables = board.templating.list
    .filter((v) => v.type === 'query')
    .map((v) => {
      const query = (v.query as { query: string }).query;
      const match = /^label_values\(\s*([^,]+),\s*(\w+)\s*\)$/.exec(query);
      if (!match) throw new Error(`variable ${v.name}: not label_values(METRIC, LABEL): ${query}`);
      return { where: `variable ${v.name}`, expr: `max by (${match[2]}) (${match[1]})` };
    });
  return [...rules, ...panels, ...variables];
}
