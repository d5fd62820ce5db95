import type { ErrorObject } from 'ajv';

/** Names in a message are cut to this: they come from the caller, and a message is not a dump. */
const MAX_NAME_CHARS = 64;

/** `a.b.0` for AJV's `/a/b/0`, with JSON-pointer escapes undone; the root's label when empty. */
function pathOf(instancePath: string, root: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  return parts.length === 0 ? root : parts.join('.');
}

const quoted = (name: unknown): string => JSON.stringify(String(name).slice(0, MAX_NAME_CHARS));

/**
 * The one way a schema violation is put into words, whatever the surface: config file, MCP tool
 * arguments or results, HTTP query and body. One line per problem, `path: what is wrong`, the
 * path in dots (`providers.github.secret`, `arguments`), naming keys and rules and never the
 * values sent. `root` names the whole document when the problem is at its top.
 */
export function schemaErrorLines(
  errors: readonly ErrorObject[] | null | undefined,
  root: string,
  /**
   * A "did you mean …?" for an unknown field or a value outside an enum, or undefined. The config
   * file passes one worked out from what it holds; a surface answering other parties passes none.
   * With a hint, an enum's allowed values are counted instead of listed.
   */
  hint?: (error: ErrorObject) => string | undefined,
): string[] {
  const lines = new Set<string>();
  for (const error of errors ?? []) {
    const at = pathOf(error.instancePath, root);
    const guess = hint?.(error);
    const then = guess === undefined || guess === '' ? '' : `; ${guess}`;
    switch (error.keyword) {
      case 'additionalProperties': {
        const extra = (error.params as { additionalProperty?: unknown }).additionalProperty;
        lines.add(`${at === root ? '' : `${at}.`}${String(extra).slice(0, MAX_NAME_CHARS)}: unknown field${then}`);
        break;
      }
      case 'enum': {
        const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues ?? [];
        lines.add(
          then === ''
            ? `${at}: must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`
            : `${at}: not one of the ${allowed.length} allowed values${then}`,
        );
        break;
      }
      case 'pattern':
        // Under propertyNames the pattern is about a key, which the path does not include.
        lines.add(
          error.propertyName === undefined
            ? `${at}: ${error.message ?? 'does not match the expected format'}`
            : `${at}: key ${quoted(error.propertyName)} is not allowed (lower-case letters, digits, - and _)`,
        );
        break;
      case 'false schema':
        // A key the schema refuses in this place, such as a queue key on a webhook provider.
        lines.add(`${at}: not allowed here`);
        break;
      case 'propertyNames':
      case 'anyOf':
      case 'if':
        // The errors around these say more; they only repeat them.
        break;
      default:
        lines.add(`${at}: ${error.message ?? 'is invalid'}`);
    }
  }
  if (lines.size === 0) lines.add(`${root}: is invalid`);
  return [...lines];
}

/** The first few problems on one line, for a response or a log field. */
export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined, root: string): string {
  return schemaErrorLines(errors, root).slice(0, 3).join('; ');
}
