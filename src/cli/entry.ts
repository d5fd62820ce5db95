/**
 * The process entry point: runs the CLI on this process's arguments and exits with its code.
 * bin/switchboard.js loads it compiled from dist/; tests and benches run it from source with tsx.
 */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
