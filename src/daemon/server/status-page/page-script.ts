// The status page's script as served (/status-page/page.js): its seven parts in one strict IIFE; nothing global but window.statusDocument (the document it shows, to read at the console).
import { SCRIPT_FORMAT } from './script-format.js';
import { SCRIPT_HISTORY } from './script-history.js';
import { SCRIPT_LIVE } from './script-live.js';
import { SCRIPT_OVERVIEW } from './script-overview.js';
import { SCRIPT_PLAN } from './script-plan.js';
import { SCRIPT_ROWS } from './script-rows.js';
import { SCRIPT_WINDOW } from './script-window.js';

/** Browser JavaScript: no import, no framework, no request but GET /status and GET /history/KIND/NAME to the page's own origin. */
export const PAGE_SCRIPT = `// converge status page: reads GET /status and a resource's GET /history (docs/status-page.md).\n(() => {\n'use strict';\n${SCRIPT_OVERVIEW}${SCRIPT_ROWS}${SCRIPT_HISTORY}${SCRIPT_WINDOW}${SCRIPT_PLAN}${SCRIPT_FORMAT}${SCRIPT_LIVE}})();\n`;
