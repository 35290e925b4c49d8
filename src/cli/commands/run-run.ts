// What `converge run DIR` runs (its flags and --help are in run.ts, loaded without this): the status port bound at once, then the daemon loaded.
import { closeStatusPort, listenStatusPort } from '../../daemon/server/status-port.js';
import { requireApiUrl } from '../api-url.js';
import { refuseLiteralSecrets } from '../literal-secrets.js';
import { resolveSettings } from '../settings.js';
import type { CommandIo, ParsedArgs } from '../command.js';
import type { SignalHandOver } from './run-daemon.js';

/** Holds SIGTERM and SIGINT from now on (the process does not die of one) until they are handed over. */
function holdSignals(): SignalHandOver {
  const held: NodeJS.Signals[] = [];
  const hold = (signal: NodeJS.Signals): void => void held.push(signal);
  process.on('SIGTERM', hold);
  process.on('SIGINT', hold);
  return (handler) => {
    process.off('SIGTERM', hold);
    process.off('SIGINT', hold);
    for (const signal of held.splice(0)) handler(signal);
  };
}

/**
 * Runs `converge run DIR`; returns the exit code. The settings are checked, then the status port is bound before the
 * daemon's modules load (most of a start's first second), so /healthz answers while they do and /readyz says
 * "starting"; the daemon's status server then takes the same socket over (docs/daemon.md, "Start-up"). A signal that
 * comes meanwhile is held and handed to the daemon's handlers, which stop the daemon as soon as it is up.
 */
export async function runDaemonCommand(args: ParsedArgs, io: CommandIo): Promise<number> {
  const settings = requireApiUrl(await resolveSettings(args, io.env));
  refuseLiteralSecrets('run', settings);
  const handOver = holdSignals();
  try {
    const listening = await listenStatusPort(settings.httpHost, settings.httpPort);
    try {
      const { runDaemon } = await import('./run-daemon.js');
      return await runDaemon(args, io, settings, listening, handOver);
    } catch (error) {
      // A start that failed before the daemon took the port (a receiver's variable missing, Redis away): it closes here.
      await closeStatusPort(listening);
      throw error;
    }
  } finally {
    handOver(() => undefined);
  }
}
