/**
 * Fails a test file that makes Node warn about a listener leak (MaxListenersExceededWarning,
 * issue 26.17): more than ten listeners of one kind on one emitter means something attaches per
 * request or per call and never detaches, which grows without bound in a long-running server.
 * The warning's stack names where the eleventh listener was added.
 */
import { afterAll } from 'vitest';

const seen: string[] = [];
const onWarning = (warning: Error): void => {
  if (warning.name === 'MaxListenersExceededWarning') seen.push(warning.stack ?? warning.message);
};
process.on('warning', onWarning);

afterAll(() => {
  process.off('warning', onWarning);
  if (seen.length > 0) {
    const [first] = seen;
    throw new Error(`${seen.length} listener-leak warning(s) in this file; the first:\n${first ?? ''}`);
  }
});
