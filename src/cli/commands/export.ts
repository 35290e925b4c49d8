// `converge export --out DIR`: one manifest per live deployment (and provider, when the service lists them), ready to commit.
import { access, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../../core/errors.js';
import { exportDeployment } from '../../core/kinds/deployment/export.js';
import type { ExportedDocument } from '../../core/kinds/export-names.js';
import { kindOf } from '../../core/kinds/index.js';
import { exportProvider } from '../../core/kinds/oauth-provider/export.js';
import { renderExported } from '../../core/manifest/export.js';
import type { LiveDeployment } from '../../core/model.js';
import type { CatalogEntry } from '../../core/repositories.js';
import type { ServiceClient } from '../../service/client.js';
import { listCatalog } from '../../service/repositories.js';
import type { Command } from '../command.js';
import { resolveSettings, settingOptions } from '../settings.js';
import { openTarget, requireApiUrl } from '../target.js';

/** The JSON Schema of manifests shipped with converge (the modeline points at it). */
const SCHEMA_FILE = fileURLToPath(new URL('../../../schema/converge.schema.json', import.meta.url));

/** Where a resource's manifest goes below --out: deployments by name, providers in providers/. */
function fileOf(doc: ExportedDocument): string {
  return join(kindOf(doc.kind).exportFolder, `${doc.name}.yaml`);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Every live deployment (those whose names start with `prefix`, when given). */
async function listLive(client: ServiceClient, prefix: string | undefined): Promise<LiveDeployment[]> {
  const all: LiveDeployment[] = [];
  for await (const page of client.listDeploymentPages(prefix === undefined ? {} : { name_contains: prefix })) {
    for (const d of page) if (prefix === undefined || d.name.startsWith(prefix)) all.push(d);
  }
  return all;
}

interface Exported {
  file: string;
  text: string;
  env: string[];
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write one manifest per live deployment (and OAuth provider) to adopt an existing workspace; secrets as env references, never values',
  usage: 'converge export (--out DIR [--force] | --stdout) [--name-prefix P] [options]',
  details:
    'Each manifest carries the annotation converge/adopt: "true" and every secret as valueFrom: { env: NAME } (the variables are listed on stderr).\n' +
    'With those variables set, `converge plan DIR` shows only the secret writes that take each deployment over. Previews, deployments\n' +
    'being deleted, and live values the manifest schema refuses are skipped and named on stderr.',
  positionals: [0, 0],
  options: {
    out: { type: 'string', placeholder: 'DIR', description: 'directory to write the manifests to (created when missing)' },
    force: { type: 'boolean', description: 'overwrite manifest files that exist already' },
    stdout: { type: 'boolean', description: 'print the documents to stdout instead of writing files' },
    ...settingOptions('apiUrl', 'apiKey', 'tenantId', 'namePrefix', 'emulatorState', 'requestTimeout'),
  },
  async run(args, io) {
    const toStdout = args.values.stdout === true;
    const outArg = args.values.out as string | undefined;
    if (toStdout === (outArg !== undefined)) throw new UsageError('give either --out DIR or --stdout; see "converge export --help"');
    const settings = requireApiUrl(resolveSettings(args, io.env));
    const out = resolve(io.cwd, outArg ?? '.');
    const target = await openTarget(settings);
    let docs: ExportedDocument[];
    const skipped: string[] = [];
    try {
      const live = await listLive(target.client, settings.namePrefix);
      const catalog: CatalogEntry[] = live.some((d) => d.source === 'codehost') ? await listCatalog(target.client) : [];
      const providers = await target.client.listProviders();
      docs = [];
      for (const deployment of live) {
        const doc = exportDeployment(deployment, catalog);
        if ('skipped' in doc) skipped.push(`Deployment/${deployment.name}: ${doc.skipped}`);
        else docs.push(doc);
      }
      if (providers.readable) docs.push(...providers.providers.map(exportProvider));
      else skipped.push(`OAuth providers: ${providers.note}`);
    } finally {
      await target.close();
    }
    const rendered: Exported[] = [];
    for (const doc of docs) {
      const file = fileOf(doc);
      const schema = relative(dirname(join(out, file)), SCHEMA_FILE).split('\\').join('/');
      const result = renderExported(doc, schema, file);
      if ('invalid' in result) skipped.push(`${doc.kind}/${doc.name}: its live state makes no valid manifest: ${result.invalid}`);
      else rendered.push({ file, text: result.text, env: doc.env });
    }
    if (toStdout) {
      io.stdout.write(rendered.map((r) => r.text).join('---\n'));
    } else {
      const taken = [];
      for (const r of rendered) if (await exists(join(out, r.file))) taken.push(r.file);
      if (taken.length > 0 && args.values.force !== true) {
        throw new UsageError(`${taken.length} file${taken.length === 1 ? '' : 's'} exist already in ${out} (${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''}); nothing was written; give --force to overwrite them`);
      }
      for (const r of rendered) {
        await mkdir(dirname(join(out, r.file)), { recursive: true });
        await writeFile(join(out, r.file), r.text);
      }
    }
    for (const line of skipped) io.stderr.write(`converge export: skipped ${line}\n`);
    const env = rendered.flatMap((r) => r.env);
    const where = toStdout ? 'to stdout' : `to ${out}`;
    io.stderr.write(`converge export: ${rendered.length} manifest${rendered.length === 1 ? '' : 's'} ${where}${skipped.length ? `, ${skipped.length} skipped` : ''}\n`);
    if (env.length > 0) io.stderr.write(`converge export: set these environment variables (the secret values) before plan or apply: ${env.join(' ')}\n`);
    return 0;
  },
};
