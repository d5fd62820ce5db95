/**
 * Which database the environment names: DATABASE_URL, else the embedded PostgreSQL of the data
 * directory (SWITCHBOARD_DATA_DIR, default ./.switchboard). Apart from database.ts so that the
 * commands that only need the answer (`data info`, the start-up banner) load no database driver.
 */
import path from 'node:path';

export function databaseOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): {
  databaseUrl: string | undefined;
  dataDir: string;
} {
  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  const dataDir = path.resolve(env.SWITCHBOARD_DATA_DIR?.trim() || '.switchboard');
  return { databaseUrl, dataDir };
}
