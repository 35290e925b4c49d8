// Files named in text and markdown output as they open from the working directory: the directory as typed plus the path in it.
import { posix } from 'node:path';
import type { Diagnostic } from '../core/diagnostics.js';
import type { Plan } from '../core/model.js';

/** Maps a path relative to the manifest directory to the path a person opens from the working directory. */
export type ShownPath = (file: string) => string;

/** A path as typed, with forward slashes and normalized: `./x/` is `x`, `x/../y` is `y`, `.` stays `.`. */
export function normalizedPath(typed: string): string {
  const normal = posix.normalize(typed.replace(/\\/g, '/'));
  return normal.length > 1 ? normal.replace(/\/+$/, '') : normal;
}

/**
 * The paths of diagnostics as shown in text and markdown (docs/commands.md, "Paths in messages"): `dir` as typed,
 * joined with the path in it and normalized (`converge validate ./envvar` names `envvar/a.yaml`); an absolute path (a
 * `--vars` file outside the directory) and an absolute `dir` give absolute paths.
 */
export function shownFrom(dir: string): ShownPath {
  const base = normalizedPath(dir);
  return (file) => (posix.isAbsolute(file) ? file : posix.join(base, file));
}

/** A diagnostic whose file is named as shown. */
export function shownDiagnostic<T extends Pick<Diagnostic, 'file'>>(diagnostic: T, shown: ShownPath): T {
  return { ...diagnostic, file: shown(diagnostic.file) };
}

/** The plan as text and markdown show it: its diagnostics' files as shown. JSON and a saved plan keep the plan's own. */
export function shownPlan(plan: Plan, shown: ShownPath): Plan {
  return { ...plan, diagnostics: plan.diagnostics.map((d) => shownDiagnostic(d, shown)) };
}

/** A `file:line:column` place (a file that fails to load) named as shown. */
export function shownPlace(place: string, shown: ShownPath): string {
  const match = /^(.*):(\d+):(\d+)$/.exec(place);
  return match ? `${shown(match[1]!)}:${match[2]}:${match[3]}` : place;
}
