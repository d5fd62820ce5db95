/**
 * Server and browser are typed apart (docs/architecture.md, "Three type-checked projects"): the
 * server's project has no DOM, so a browser global in server code is a type error; the bundle's has
 * no Node types, so a Node API in browser code is one; the code that drives a browser has both.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

function parsed(configPath: string): ts.ParsedCommandLine {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, configPath),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (config === undefined) throw new Error(`${configPath} did not parse`);
  return config;
}

const hasDom = (config: ts.ParsedCommandLine): boolean =>
  (config.options.lib ?? []).some((lib) => lib.toLowerCase().startsWith('lib.dom'));
const rel = (config: ts.ParsedCommandLine): string[] => config.fileNames.map((file) => file.slice(root.length + 1));

describe('type-checked projects', () => {
  const server = parsed('tsconfig.json');
  const browser = parsed('src/ui/client/tsconfig.json');
  const driving = parsed('test/ui/tsconfig.json');

  it('gives the server no DOM and takes no browser code into it', () => {
    expect(hasDom(server)).toBe(false);
    expect(server.options.types).toEqual(['node']);
    expect(rel(server).filter((file) => file.startsWith('src/ui/client/'))).toEqual([]);
    expect(rel(server).some((file) => file.startsWith('src/server/'))).toBe(true);
  });

  it('gives the browser bundle the DOM and no Node types', () => {
    expect(hasDom(browser)).toBe(true);
    expect(browser.options.types).toEqual([]);
    expect(rel(browser).every((file) => file.startsWith('src/ui/client/'))).toBe(true);
  });

  it('gives only the UI tests and the code that drives a browser both, and checks them nowhere else', () => {
    expect(hasDom(driving)).toBe(true);
    expect(driving.options.types).toEqual(['node']);
    const drivingFiles = rel(driving).filter((file) => !file.endsWith('global-setup.ts'));
    expect(drivingFiles.filter((file) => rel(server).includes(file))).toEqual([]);
  });

  it('checks exact optional property types everywhere', () => {
    for (const config of [server, browser, driving]) expect(config.options.exactOptionalPropertyTypes).toBe(true);
  });
});
