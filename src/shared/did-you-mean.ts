/**
 * "did you mean …?" for a mistyped name: the candidates closest to it by edit distance, when one
 * is close enough to be a likely typo. The CLI's commands, the config's keys and the preset names
 * all ask here, so a typo is answered the same way wherever it is made.
 */

/**
 * Edits (insert, delete, substitute, or swap two neighbours) between two strings: the optimal
 * string alignment distance, so `serev` is one edit from `serve`, as a person counts it.
 * @internal outside src/, only tests or benches use it
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i += 1) rows.push([i, ...Array.from({ length: b.length }, (_, j) => j + 1)]);
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i += 1) {
    const row = rows[i] ?? [];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      row[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The candidates nearest to `given` (case ignored), in their order, when they are within a third
 * of its length (at least one edit): a typo, not a different word. Empty when none is that near.
 * @internal outside src/, only tests or benches use it
 */
export function closestNames(given: string, candidates: readonly string[]): string[] {
  const word = given.toLowerCase();
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best = limit + 1;
  let found: string[] = [];
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate.toLowerCase());
    if (distance < best) {
      best = distance;
      found = [candidate];
    } else if (distance === best) found.push(candidate);
  }
  return found;
}

/** `did you mean "twilio"?` (or `"a" or "b"`), or '' when nothing is near enough. */
export function didYouMean(given: string, candidates: readonly string[]): string {
  const near = closestNames(given, candidates).map((name) => JSON.stringify(name));
  if (near.length === 0) return '';
  const listed = near.length === 1 ? near[0] : `${near.slice(0, -1).join(', ')} or ${near.at(-1) ?? ''}`;
  return `did you mean ${listed}?`;
}
