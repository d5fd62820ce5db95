/**
 * The config file speaks snake_case (`max_sessions_per_caller`), the code camelCase. This is the
 * one mapping between them, in types and in values, so a key added to the schema reaches the code
 * under its camelCase name without a line written by hand.
 *
 * Only keys the schema names go through it: maps keyed by the user's own names (providers,
 * forward rules) are mapped entry by entry, since a name such as `local_app` must stay as written.
 */

/** `max_sessions_per_caller` → `maxSessionsPerCaller`. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** The keys of T that may be left out. */
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

/**
 * T with every object key camelCased, at every depth (arrays mapped item by item). A key the file
 * may leave out (no default in the schema) is typed as present and possibly undefined: the code
 * reads a resolved config, where "not set" is a value, not a missing field.
 */
export type CamelCased<T> = T extends readonly (infer Item)[]
  ? CamelCased<Item>[]
  : T extends object
    ? {
        [K in keyof T as K extends string ? CamelCase<K> : K]-?: K extends OptionalKeys<T>
          ? CamelCased<Exclude<T[K], undefined>> | undefined
          : CamelCased<T[K]>;
      }
    : T;

function camelCase<S extends string>(key: S): CamelCase<S> {
  return key.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase()) as CamelCase<S>;
}

/** A copy of value with every object key camelCased, at every depth. */
export function camelCased<T>(value: T): CamelCased<T> {
  if (Array.isArray(value)) return value.map((item: unknown) => camelCased(item)) as CamelCased<T>;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [camelCase(key), camelCased(inner as unknown)]),
    ) as CamelCased<T>;
  }
  return value as CamelCased<T>;
}
