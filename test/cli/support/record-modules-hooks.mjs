/* global process */
// The hooks of record-modules.mjs (they run on the loader thread).
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  appendFileSync(process.env.SB_MODULES_LOG, `${result.url}\n`);
  return result;
}
