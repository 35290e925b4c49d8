// The emulator's defaults that its command's --help states (src/cli/commands/emulator.ts), in a module that loads nothing.

/** Milliseconds a new revision takes to build and deploy, and a deleted deployment stays AWAITING_DELETE, without --build-ms. */
export const DEFAULT_BUILD_MS = 2000;
