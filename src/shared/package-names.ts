/**
 * The names package.json gives switchboard. The CLI uses them to say how to run it where the user
 * is; the auth and API surfaces fall back to the bare bin name when no invocation is known (tests,
 * embedding), so the fallback is written once, here.
 */
export const PACKAGE_NAME = '@switchboard-dev/switchboard';
export const BIN_NAME = 'switchboard';
