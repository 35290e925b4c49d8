// The status page's script as served (/status-page/page.js): its four parts in one strict IIFE, nothing global.
import { SCRIPT_LIVE } from './script-live.js';
import { SCRIPT_OVERVIEW } from './script-overview.js';
import { SCRIPT_ROWS } from './script-rows.js';
import { SCRIPT_WINDOW } from './script-window.js';

/** Browser JavaScript: no import, no framework, no request but GET /status to the page's own origin. */
export const PAGE_SCRIPT = `// converge status page: reads GET /status (docs/status-page.md).\n(() => {\n'use strict';\n${SCRIPT_OVERVIEW}${SCRIPT_ROWS}${SCRIPT_WINDOW}${SCRIPT_LIVE}})();\n`;
