import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isCollection, parseDocument, visit } from 'yaml';
import { ConfigError } from './config-error.ts';
import { interpolateEnv, wholePlaceholder, type UnsetVariable } from './interpolate-env.ts';
import { resolveConfig, type ResolvedConfig } from './resolve-config.ts';

export interface ConfigSource {
  /** --config PATH */
  flagPath?: string | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/**
 * Which file to read: --config, then SWITCHBOARD_CONFIG, then ./switchboard.yaml if it exists.
 * @internal outside src/, only tests or benches use it
 */
export function findConfigPath(source: ConfigSource): string | null {
  const explicit = source.flagPath ?? source.env.SWITCHBOARD_CONFIG;
  if (explicit !== undefined && explicit !== '') {
    const path = resolve(source.cwd, explicit);
    if (!existsSync(path)) throw new ConfigError(`config file ${explicit} does not exist`);
    return path;
  }
  const fallback = resolve(source.cwd, 'switchboard.yaml');
  return existsSync(fallback) ? fallback : null;
}

/** The config, and the ${VAR}s it uses that are not set (the caller warns, or refuses with --strict). */
export type LoadedConfig = ResolvedConfig & { unsetVariables: UnsetVariable[] };

export function loadConfig(source: ConfigSource): LoadedConfig & { path: string | null } {
  const path = findConfigPath(source);
  const text = path === null ? '' : readFileSync(path, 'utf8');
  return { ...parseConfig(text, source.env), path };
}

/**
 * yaml's message with prettyErrors: one sentence ending `at line 5, column 1:`, a blank line, the
 * line before and the line at fault, and a caret under the column. Kept whole (the sentence alone
 * ended in a dangling colon), the code frame indented so it stands apart from the sentence.
 */
function withCodeFrame(message: string): string {
  const [sentence = message, ...frame] = message.trimEnd().split('\n');
  const lines = frame.filter((line, i) => i > 0 || line !== '');
  return lines.length === 0
    ? sentence.replace(/:$/, '')
    : `${sentence}\n\n${lines.map((line) => `    ${line}`).join('\n')}`;
}

/** @internal outside src/, only tests or benches use it */
export function parseConfig(text: string, env: NodeJS.ProcessEnv): LoadedConfig {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) throw new ConfigError(`invalid YAML: ${withCodeFrame(first.message)}`);
  // Every key of a config file is a name. A sequence or mapping used as a key would be turned into
  // its string form by toJS, with a process warning, and checked as that odd name.
  visit(doc, {
    Pair(_, pair) {
      if (isCollection(pair.key)) {
        const line = pair.key.range ? text.slice(0, pair.key.range[0]).split('\n').length : undefined;
        throw new ConfigError(
          `invalid YAML: a key must be a plain value, not a list or mapping${line === undefined ? '' : ` (line ${line})`}`,
        );
      }
    },
  });
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (err) {
    // Aliases are resolved here, not while parsing: an alias without its anchor and an alias
    // bomb (yaml's maxAliasCount) throw a ReferenceError that doc.errors never lists.
    const message = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`invalid YAML: ${message.split('\n')[0] ?? message}`);
  }
  const unsetVariables: UnsetVariable[] = [];
  const config = resolveConfig(interpolateEnv(raw, env, '', unsetVariables));
  return { ...withTokenVariables(config, raw), unsetVariables };
}

/**
 * Notes which token providers take their token from one `${VAR}` of the file, so that the test
 * command the UI offers sends "$VAR" (the variable's name, never its value) rather than a made-up one.
 */
function withTokenVariables(config: ResolvedConfig, raw: unknown): ResolvedConfig {
  const section = (raw as { providers?: Record<string, { token?: unknown } | null> } | null)?.providers;
  return {
    ...config,
    providers: config.providers.map((p) => {
      if (p.family !== 'webhook' || p.trustMode !== 'token') return p;
      const token = section?.[p.name]?.token;
      const variable = wholePlaceholder(Array.isArray(token) ? token[0] : token);
      return variable === undefined ? p : { ...p, tokenVariable: variable };
    }),
  };
}
