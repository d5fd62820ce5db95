import { ConfigError } from './config-error.ts';

const PLACEHOLDER = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A ${VAR} without a default whose variable is unset or empty, and the key that uses it. */
export interface UnsetVariable {
  variable: string;
  /** The config key, in dots: providers.stripe.secret. */
  key: string;
}

/**
 * The unset variables that one provider's keys use, written as in the file (`${GITHUB_WEBHOOK_SECRET}`),
 * each once: what the banner and trigger name when a provider is left without its secret.
 */
export function unsetPlaceholdersOf(provider: string, unset: readonly UnsetVariable[]): string[] {
  const under = unset.filter((u) => u.key.startsWith(`providers.${provider}.`)).map((u) => `\${${u.variable}}`);
  return [...new Set(under)];
}

/** NAME when the value is exactly one `${NAME}` (or `${NAME:-default}`), else undefined. */
export function wholePlaceholder(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  return /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}$/.exec(value.trim())?.[1];
}

/**
 * Replaces ${VAR} (and ${VAR:-default}) in every string so secrets live in the environment, not
 * in the file. `$$` is a literal `$`. An unset variable becomes an empty string, so a provider
 * whose secret variable is missing reports secret_status "missing" instead of refusing to start;
 * each one is added to `unset`, for the start-up warning (or --strict's refusal).
 */
export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  path = '',
  unset: UnsetVariable[] = [],
): unknown {
  if (typeof value === 'string') {
    if (/\$\{(?![A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\})/.test(value.replace(/\$\$/g, ''))) {
      throw new ConfigError(`${path || '(root)'}: malformed \${...} placeholder; use \${NAME} or \${NAME:-default}`);
    }
    return value.replace(PLACEHOLDER, (match, name: string | undefined, fallback: string | undefined) => {
      if (match === '$$') return '$';
      const found = name === undefined ? undefined : env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback === undefined && name !== undefined) unset.push({ variable: name, key: path || '(root)' });
      return fallback ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, `${path}[${i}]`, unset));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, path ? `${path}.${k}` : k, unset)]),
    );
  }
  return value;
}
