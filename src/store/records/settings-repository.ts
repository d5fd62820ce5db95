/** Small JSON settings the server keeps for itself (not user configuration, which is YAML). */
import { sql, type DatabasePool, type SerializableValue } from 'slonik';
import { z } from 'zod';
import { invalidArgument } from '../../errors/app-error.ts';
import { assertStorePool } from '../database/database.ts';

export interface SettingsRepository {
  /** The stored JSON value, or undefined when the key was never set. Callers validate its shape. */
  get(key: string): Promise<unknown>;
  set(key: string, value: SerializableValue): Promise<void>;
  delete(key: string): Promise<boolean>;
}

const valueRow = z.object({ value: z.unknown() });

export function createSettingsRepository(pool: DatabasePool): SettingsRepository {
  assertStorePool(pool);

  const checkKey = (key: string): void => {
    if (typeof key !== 'string' || key.length === 0 || key.length > 200 || key.includes('\u0000')) {
      throw invalidArgument('setting key must be 1 to 200 characters');
    }
  };

  return {
    async get(key) {
      checkKey(key);
      const row = await pool.maybeOne(sql.type(valueRow)`SELECT value FROM settings WHERE key = ${key}`);
      return row?.value;
    },

    async set(key, value) {
      checkKey(key);
      if (value === undefined) throw invalidArgument('setting value must be JSON');
      await pool.query(sql.unsafe`
        INSERT INTO settings (key, value) VALUES (${key}, ${sql.jsonb(value)})
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
      `);
    },

    async delete(key) {
      checkKey(key);
      const result = await pool.query(sql.unsafe`DELETE FROM settings WHERE key = ${key}`);
      return result.rowCount > 0;
    },
  };
}
