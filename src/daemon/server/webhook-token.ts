// The environment variable of the token POST /reconcile and /webhook take, in a module that loads nothing (the CLI's
// reconcile --help names it without loading the status server).

/** The daemon's token for POST /reconcile (a bearer token) and POST /webhook (the webhook's secret); unset turns both off. */
export const WEBHOOK_TOKEN_ENV = 'CONVERGE_WEBHOOK_TOKEN';
