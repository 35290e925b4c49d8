// What `converge export --out DIR` runs (its flags and --help are in export.ts, loaded without this).
import { EXPORT_SCHEMA_NAME } from './values.js';
import { access, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { UsageError } from '../../core/errors.js';
import type { ExportedDocument } from '../../core/kinds/export-names.js';
import { allKinds, kindOf } from '../../core/kinds/index.js';
import { renderExported } from '../../core/manifest/export.js';
import { manifestJsonSchemaText } from '../../core/manifest/json-schema.js';
import type { CatalogEntry } from '../../core/repositories.js';
import { listLiveDeployments } from '../../observe/live.js';
import { listCatalog } from '../../service/repositories.js';
import { loadManifestDir } from '../../observe/manifests.js';
import { environmentOf } from '../environment.js';
import { resolveSettings } from '../settings.js';
import { overlayFiles } from './export-overlay.js';
import { openTarget, requireApiUrl } from '../target.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/** Where a resource's manifest goes below --out: deployments by name, providers in providers/. */
function fileOf(doc: ExportedDocument): string {
  return join(kindOf(doc.kind).exportFolder, `${doc.name}.yaml`);
}

/** The modeline's $schema of the manifest `file` (relative to --out): --schema-ref as given, else the schema beside them. */
function schemaRefOf(file: string, given: string | undefined): string {
  return given ?? relative(dirname(file), EXPORT_SCHEMA_NAME).split('\\').join('/');
}

/** Whether writing the schema to `path` would replace another file: a file there that is not this very schema. */
async function schemaTaken(path: string, text: string): Promise<boolean> {
  const current = await readFile(path, 'utf8').catch(() => undefined);
  return current !== undefined && current !== text;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

interface Exported {
  file: string;
  text: string;
  env: string[];
  doc: ExportedDocument;
}

/** The base's manifest data by resource key, with this environment's variables and overlays; refused when it has errors. */
async function readBase(dir: string, environment: ReturnType<typeof environmentOf>): Promise<Map<string, unknown>> {
  const loaded = await loadManifestDir(dir, {
    allowLiteralSecrets: false,
    keepData: true,
    ...(environment ? { environment } : {}),
  });
  const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) {
    const first = errors[0]!;
    throw new UsageError(
      `the base ${dir} has ${errors.length} error${errors.length === 1 ? '' : 's'} with these variables and overlays (first: ${first.file}:${first.line}:${first.column}: ${first.message}); nothing was written; fix them (converge validate)`,
    );
  }
  return loaded.data ?? new Map();
}

/** Files of `files` that exist below `dir` already. */
async function existing(dir: string, files: string[]): Promise<string[]> {
  const taken = [];
  for (const file of files) if (await exists(join(dir, file))) taken.push(file);
  return taken;
}

/** The documents of every live deployment and provider of the workspace, and what could not be exported (and why). */
async function liveDocuments(
  settings: Parameters<typeof openTarget>[0] & { namePrefix?: string | undefined },
): Promise<{ docs: ExportedDocument[]; skipped: string[] }> {
  const target = await openTarget(settings);
  const docs: ExportedDocument[] = [];
  const skipped: string[] = [];
  try {
    const live = await listLiveDeployments(target.client, { namePrefix: settings.namePrefix });
    const catalog: CatalogEntry[] = live.some((d) => d.source === 'codehost') ? await listCatalog(target.client) : [];
    const providers = await target.client.listProviders();
    for (const kind of allKinds()) {
      const exported = kind.exportLive({ deployments: live, catalog, providers });
      docs.push(...exported.docs);
      skipped.push(...exported.skipped);
    }
  } finally {
    await target.close();
  }
  return { docs, skipped };
}

/** What `converge export` was asked for, its flags checked. */
interface ExportInputs {
  settings: ReturnType<typeof requireApiUrl>;
  toStdout: boolean;
  /** --out, resolved (the working directory with --stdout). */
  out: string;
  schemaRef: string | undefined;
  /** --overlay-out, resolved. */
  overlayOut: string | undefined;
  force: boolean;
}

/** The flags of `converge export`, checked: one clear line for a combination that cannot work. */
async function exportInputs(args: ParsedArgs, io: CommandIo): Promise<ExportInputs> {
  const toStdout = args.values.stdout === true;
  const outArg = args.values.out as string | undefined;
  if (toStdout === (outArg !== undefined))
    throw new UsageError('give either --out DIR or --stdout; see "converge export --help"');
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  const out = resolve(io.cwd, outArg ?? '.');
  const schemaRef = args.values['schema-ref'] as string | undefined;
  if (schemaRef === '')
    throw new UsageError(
      '--schema-ref needs a URL or a path (or leave it out: the schema is written beside the files)',
    );
  const overlayArg = args.values['overlay-out'] as string | undefined;
  if (overlayArg !== undefined && toStdout)
    throw new UsageError('--overlay-out writes files: give it with --out BASE, not --stdout');
  const overlayOut = overlayArg === undefined ? undefined : resolve(io.cwd, overlayArg);
  return { settings, toStdout, out, schemaRef, overlayOut, force: args.values.force === true };
}

/** Runs `converge export --out DIR`; returns the exit code. */
export async function runExportCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const inputs = await exportInputs(args, io);
  const { settings, toStdout, out, schemaRef, overlayOut } = inputs;
  const baseExists = overlayOut
    ? (await exists(out)) && (await readdir(out, { recursive: true })).some((f) => /\.ya?ml$/i.test(String(f)))
    : false;
  const base = overlayOut && baseExists ? await readBase(out, environmentOf(settings, io.cwd, out)) : undefined;
  const { docs, skipped } = await liveDocuments(settings);
  const rendered: Exported[] = [];
  for (const doc of docs) {
    const file = fileOf(doc);
    const result = renderExported(doc, schemaRefOf(file, schemaRef), file);
    if ('invalid' in result)
      skipped.push(`${doc.kind}/${doc.name}: its live state makes no valid manifest: ${result.invalid}`);
    else rendered.push({ file, text: result.text, env: doc.env, doc });
  }
  if (overlayOut && base) return writeOverlay(io, inputs, overlayOut, { base, rendered, skipped });
  if (overlayOut) {
    await mkdir(overlayOut, { recursive: true });
    io.stderr.write(
      `converge export: ${out} held no manifest: the base is written there from this workspace, and its overlay ${overlayOut} is empty\n`,
    );
  }
  if (toStdout) io.stdout.write(rendered.map((r) => r.text).join('---\n'));
  else await writeManifests(inputs, rendered);
  closingLines(io, inputs, rendered, skipped);
  return 0;
}

/** Writes the overlay of this workspace over the base: a patch per resource that differs, a file per one it adds. */
async function writeOverlay(
  io: CommandIo,
  inputs: ExportInputs,
  overlayOut: string,
  { base, rendered, skipped }: { base: Map<string, unknown>; rendered: Exported[]; skipped: string[] },
): Promise<number> {
  const files = overlayFiles(rendered, base);
  const taken = await existing(
    overlayOut,
    files.map((f) => f.file),
  );
  if (taken.length > 0 && !inputs.force) {
    throw new UsageError(
      `${taken.length} file${taken.length === 1 ? '' : 's'} exist already in ${overlayOut} (${taken.slice(0, 5).join(', ')}); nothing was written; give --force to overwrite them`,
    );
  }
  await mkdir(overlayOut, { recursive: true });
  for (const f of files) {
    await mkdir(dirname(join(overlayOut, f.file)), { recursive: true });
    await writeFile(join(overlayOut, f.file), f.text);
  }
  for (const line of skipped) io.stderr.write(`converge export: skipped ${line}\n`);
  const patches = files.filter((f) => f.kind === 'patch').length;
  io.stderr.write(
    `converge export: overlay of this workspace to ${overlayOut}: ${patches} patch${patches === 1 ? '' : 'es'}, ${files.length - patches} added, ${rendered.length - files.length} equal to the base ${inputs.out}\n`,
  );
  return 0;
}

/** Writes each manifest below --out, and the schema beside them unless --schema-ref; nothing when a file is taken. */
async function writeManifests({ out, schemaRef, force }: ExportInputs, rendered: Exported[]): Promise<void> {
  const taken = await existing(
    out,
    rendered.map((r) => r.file),
  );
  const schemaText = schemaRef === undefined && rendered.length > 0 ? manifestJsonSchemaText() : undefined;
  if (schemaText !== undefined && (await schemaTaken(join(out, EXPORT_SCHEMA_NAME), schemaText)))
    taken.push(EXPORT_SCHEMA_NAME);
  if (taken.length > 0 && !force) {
    throw new UsageError(
      `${taken.length} file${taken.length === 1 ? '' : 's'} exist already in ${out} (${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''}); nothing was written; give --force to overwrite them`,
    );
  }
  for (const r of rendered) {
    await mkdir(dirname(join(out, r.file)), { recursive: true });
    await writeFile(join(out, r.file), r.text);
  }
  if (schemaText !== undefined) await writeFile(join(out, EXPORT_SCHEMA_NAME), schemaText);
}

/** The export's last lines on stderr: what was skipped, how many went where, the schema, the variables to set. */
function closingLines(io: CommandIo, inputs: ExportInputs, rendered: Exported[], skipped: string[]): void {
  const { toStdout, out, schemaRef } = inputs;
  for (const line of skipped) io.stderr.write(`converge export: skipped ${line}\n`);
  const env = rendered.flatMap((r) => r.env);
  const where = toStdout ? 'to stdout' : `to ${out}`;
  io.stderr.write(
    `converge export: ${rendered.length} manifest${rendered.length === 1 ? '' : 's'} ${where}${skipped.length ? `, ${skipped.length} skipped` : ''}\n`,
  );
  if (toStdout && schemaRef === undefined && rendered.length > 0) {
    io.stderr.write(
      `converge export: the modelines point at ${EXPORT_SCHEMA_NAME} beside the files: save it there with "converge schema > ${EXPORT_SCHEMA_NAME}" (or give --schema-ref)\n`,
    );
  }
  if (env.length > 0)
    io.stderr.write(
      `converge export: set these environment variables (the secret values) before plan or apply: ${env.join(' ')}\n`,
    );
}
