/** A connection URL (DATABASE_URL, REDIS_URL) with its password replaced, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
