#!/usr/bin/env node
// Runs the compiled CLI in dist/, which `npm run build` makes (`npm ci` runs it through `prepare`)
// and the package ships. Tests and benches run the TypeScript sources through tsx instead.
try {
  await import('../dist/src/cli/entry.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.url ?? '').endsWith('/dist/src/cli/entry.js')) {
    process.stderr.write(
      'switchboard: dist/ is not built. Run `npm run build` (`npm ci` does, when the devDependencies are installed).\n',
    );
    process.exit(1);
  }
  throw error;
}
