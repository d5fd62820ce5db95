/** Whether a file or folder is there (and reachable): any error from stat counts as no. */
import { stat } from 'node:fs/promises';

export async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
