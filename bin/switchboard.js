#!/usr/bin/env node
// Runs the TypeScript sources through tsx, so `npm ci` is the only set-up step: there is no build to forget.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
