// Runs the steps of the composite action action.yml as GitHub's runner does, for the tests: each `run:` step in bash
// with the environment the runner sets, and its `${{ }}` expressions evaluated by GitHub's own evaluator
// (@actions/expressions). Its limits, on purpose: the `uses:` steps are played by the caller (setup-node,
// actions/cache, upload-artifact), an `if:` is evaluated without the implicit success() (the run stops at the first
// failed step, as GitHub's does without continue-on-error), and only the contexts below exist (inputs, github, steps, env, runner).
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { data, Evaluator, Lexer, Parser } from '@actions/expressions';
import { parse } from 'yaml';

export interface ActionStep {
  id?: string;
  name?: string;
  if?: string;
  uses?: string;
  with?: Record<string, string>;
  shell?: string;
  env?: Record<string, string>;
  run?: string;
}
export interface ActionFile {
  inputs: Record<string, { default?: string; required?: boolean }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

export interface StepRun {
  label: string;
  skipped: boolean;
  code: number;
  stdout: string;
  stderr: string;
}

/** What a `uses:` step does in the test: its outputs (written by the caller, e.g. actions/cache's cache-hit). */
export type PlayUses = (step: ActionStep, withValues: Record<string, string>) => Promise<Record<string, string>>;

export interface ActionRun {
  steps: StepRun[];
  outputs: Record<string, string>;
  /** The first failed step's exit code, or 0. */
  code: number;
}

export async function readAction(path: string): Promise<ActionFile> {
  return parse(await readFile(path, 'utf8')) as ActionFile;
}

/** One expression's value in `contexts`, as a string (GitHub's coercion). */
function evaluate(expression: string, contexts: Record<string, unknown>): string {
  const lexed = new Lexer(expression).lex();
  const tree = new Parser(lexed.tokens, Object.keys(contexts), []).parse();
  return new Evaluator(tree, JSON.parse(JSON.stringify(contexts), data.reviver) as data.Dictionary)
    .evaluate()
    .coerceString();
}

/** A value with every `${{ expression }}` in it replaced by the expression's value. */
export function substitute(text: string, contexts: Record<string, unknown>): string {
  return text.replace(/\$\{\{(.*?)\}\}/g, (_, expression: string) => evaluate(expression.trim(), contexts));
}

/** Whether an `if:` holds (its expression, with or without `${{ }}`, is truthy). */
function holds(condition: string, contexts: Record<string, unknown>): boolean {
  const inner = /^\s*\$\{\{(.*)\}\}\s*$/.exec(condition)?.[1] ?? condition;
  return evaluate(`!(${inner})`, contexts) === 'false';
}

/** `key=value` lines of a GITHUB_OUTPUT file (the heredoc form is not used by action.yml). */
function readOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

function bash(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    // GitHub's command for `shell: bash`: bash --noprofile --norc -eo pipefail {0}.
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

/**
 * Runs the action's steps in `workspace` with `given` inputs (as a workflow's `with:` gives them: strings), the
 * `github` context and the runner's variables in `env`; `temp` is RUNNER_TEMP and holds each step's GITHUB_OUTPUT.
 */
export async function runAction(
  action: ActionFile,
  options: {
    given: Record<string, string>;
    github: Record<string, unknown>;
    env: NodeJS.ProcessEnv;
    workspace: string;
    temp: string;
    playUses: PlayUses;
  },
): Promise<ActionRun> {
  const base = { github: options.github, env: options.env, runner: { os: 'Linux', temp: options.temp } };
  const inputs: Record<string, string> = {};
  for (const [name, spec] of Object.entries(action.inputs)) {
    const value = options.given[name] ?? (spec.default === undefined ? '' : substitute(String(spec.default), base));
    if (spec.required && value === '') throw new Error(`input ${name} is required`);
    inputs[name] = value;
  }
  const steps: Record<string, { outputs: Record<string, string> }> = {};
  const runs: StepRun[] = [];
  const pathFile = join(options.temp, 'github-path');
  await writeFile(pathFile, '');
  let code = 0;
  for (const [index, step] of action.runs.steps.entries()) {
    const contexts = { ...base, inputs, steps };
    const label = step.name ?? step.uses ?? `step ${index + 1}`;
    if (step.if !== undefined && !holds(step.if, contexts)) {
      runs.push({ label, skipped: true, code: 0, stdout: '', stderr: '' });
      continue;
    }
    if (step.uses) {
      const withValues = Object.fromEntries(
        Object.entries(step.with ?? {}).map(([k, v]) => [k, substitute(String(v), contexts)]),
      );
      const outputs = await options.playUses(step, withValues);
      if (step.id) steps[step.id] = { outputs };
      runs.push({ label, skipped: false, code: 0, stdout: '', stderr: '' });
      continue;
    }
    const outputFile = join(options.temp, `github-output-${index}`);
    await writeFile(outputFile, '');
    const added = (await readFile(pathFile, 'utf8')).split('\n').filter(Boolean).reverse();
    const stepEnv = Object.fromEntries(
      Object.entries(step.env ?? {}).map(([k, v]) => [k, substitute(String(v), contexts)]),
    );
    const env = {
      ...options.env,
      ...stepEnv,
      GITHUB_OUTPUT: outputFile,
      GITHUB_PATH: pathFile,
      PATH: [...added, options.env.PATH].join(':'),
    };
    const result = await bash(step.run ?? '', options.workspace, env);
    if (step.id) steps[step.id] = { outputs: readOutputs(await readFile(outputFile, 'utf8')) };
    runs.push({ label, skipped: false, ...result });
    if (result.code !== 0) {
      code = result.code;
      break;
    }
  }
  const outputs = Object.fromEntries(
    Object.entries(action.outputs).map(([name, spec]) => [name, substitute(spec.value, { ...base, inputs, steps })]),
  );
  return { steps: runs, outputs, code };
}
