// Wiring of notifications for `converge run` and `converge notify test`: the receivers' environment read, the sender built.
import type { BuildLogReader } from '../core/notify/events.js';
import { resolveReceivers, type ReceiverConfig, type ResolvedReceiver } from '../core/notify/receivers.js';
import { createSender, type Sender } from './sender.js';
import { VERSION } from '../service/version.js';

export interface NotificationWiring {
  sender: Sender;
  receivers: ResolvedReceiver[];
}

/**
 * The sender of the configured receivers, or undefined when none is configured. Throws UsageError (one line per
 * missing environment variable) before anything starts. `buildLogs` reads a failed revision's last build log lines
 * when the service client offers it (optional).
 */
export function notificationSender(
  settings: { notifications: ReceiverConfig[] },
  env: NodeJS.ProcessEnv,
  buildLogs?: BuildLogReader,
): NotificationWiring | undefined {
  if (settings.notifications.length === 0) return undefined;
  const receivers = resolveReceivers(settings.notifications, env);
  return { receivers, sender: createSender(receivers, { userAgent: `converge/${VERSION}`, buildLogs }) };
}

/** Every secret value the receivers hold (URLs, signing secrets, tokens): the logger censors them wherever they appear. */
export function receiverSecrets(wiring: NotificationWiring | undefined): string[] {
  if (!wiring) return [];
  return wiring.receivers.flatMap((r) =>
    [r.url, r.secret, r.token].filter((v): v is string => typeof v === 'string' && v.length >= 6),
  );
}
