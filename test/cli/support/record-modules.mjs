/* global process, URL */
// A module hook for CLI tests: appends every module URL the process resolves to the file named by
// SB_MODULES_LOG, so a test can tell which parts of switchboard a command loaded. Registered with
// `--import <this file>`; plain JavaScript, since it runs before tsx is ready.
import { register } from 'node:module';

if (process.env.SB_MODULES_LOG) register(new URL('./record-modules-hooks.mjs', import.meta.url));
