// What `converge run DIR` runs (its flags and --help are in run.ts, loaded without this): the status port bound at once, then the daemon loaded.
import { closeStatusPort, listenStatusPort } from '../../daemon/server/status-port.js';
import { requireApiUrl } from '../api-url.js';
import { refuseLiteralSecrets } from '../literal-secrets.js';
import { resolveSettings } from '../settings.js';
import type { CommandIo, ParsedArgs } from '../command.js';

/**
 * Runs `converge run DIR`; returns the exit code. The settings are checked, then the status port is bound before the
 * daemon's modules load (most of a start's first second), so /healthz answers while they do and /readyz says
 * "starting"; the daemon's status server then takes the same socket over (docs/daemon.md, "Start-up").
 */
export async function runDaemonCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const settings = requireApiUrl(resolveSettings(args, io.env));
  refuseLiteralSecrets('run', settings);
  const listening = await listenStatusPort(settings.httpHost, settings.httpPort);
  try {
    const { runDaemon } = await import('./run-daemon.js');
    return await runDaemon(args, io, settings, listening);
  } catch (error) {
    // A start that failed before the daemon took the port (a receiver's variable missing, Redis away): it closes here.
    await closeStatusPort(listening);
    throw error;
  }
}
