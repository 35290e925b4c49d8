// One entry of the emulator's request log: what a request asked and how it was answered (the handler and uploads fill it, server.ts keeps the log).
export interface RequestLogEntry {
  /** clock() when the request arrived. */
  at: number;
  method: string;
  path: string;
  /** The route template, e.g. /v2/deployments/{deployment_id}; "(unmatched)" for unknown paths. */
  route: string;
  query: Record<string, string>;
  /** 0 when the connection was dropped before an answer. */
  status: number;
  deploymentId?: string;
  /** The JSON body, every secret value and client_secret replaced by "<redacted sha256:first12hex>". */
  body?: unknown;
  newRevision?: boolean;
  /**
   * ok: answered < 400; error: answered >= 400, or dropped because the client left or the emulator was
   * closing (status 0); fault-503/fault-429/fault-reset: injected before handling; fault-lost: handled
   * (the write landed) but the connection was dropped instead of answered.
   */
  outcome: 'ok' | 'error' | 'fault-503' | 'fault-429' | 'fault-reset' | 'fault-lost';
}
